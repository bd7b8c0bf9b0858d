package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Status is how a suite's run ended.
type Status int

const (
	statusInvalid Status = iota
	StatusOK             // every benchmark reported
	StatusPartial        // some benchmarks reported, something failed
	StatusFailed         // nothing reported and something failed (build, panic, timeout)
	StatusNotRun         // no benchmark matched (not written yet) or the suite was not selected
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusPartial:
		return "partly failed"
	case StatusFailed:
		return "failed"
	case StatusNotRun:
		return "not run"
	}
	return "invalid"
}

// A suiteRun is one suite's process and what came of it.
type suiteRun struct {
	Suite   suite
	Args    []string // go's arguments, "test" first
	Status  Status
	Note    string // why it is not ok, one line
	Detail  string // the end of the output when it failed, for the report
	Output  *Output
	Tables  []Table
	Elapsed time.Duration // 0 when not run, or replayed without a record
}

// Command is the exact shell command the suite ran, from bench/.
func (r *suiteRun) Command() string {
	cmd := shellJoin(append([]string{"go"}, r.Args...))
	if r.Suite.Dir != "" {
		cmd = "cd " + shellQuote(r.Suite.Dir) + " && " + cmd
	}
	return cmd
}

// goTestArgs builds the go test command line of s.
func (c *config) goTestArgs(s suite) []string {
	bench, benchtime := s.Bench, s.Benchtime
	if c.quick {
		if s.QuickBench != "" {
			bench = s.QuickBench
		}
		benchtime = s.QuickBenchtime
	}
	timeout := s.Timeout
	if timeout == "" {
		timeout = "30m"
	}
	count := c.count
	if s.OneShot || c.quick {
		count = 1
	}
	args := []string{"test", "-run", "^$", "-bench", bench, "-benchtime", benchtime,
		"-count", strconv.Itoa(count), "-timeout", timeout}
	if c.quick {
		args = append(args, "-short")
	}
	return append(args, ".")
}

// runSuite runs s's benchmarks in one go test process in the bench module,
// or in s.Dir (or reads their saved output with -replay), and classifies
// the result.
func (c *config) runSuite(ctx context.Context, s suite) *suiteRun {
	r := &suiteRun{Suite: s, Args: c.goTestArgs(s)}
	if c.only != nil && !c.only.MatchString(s.ID) {
		r.Status, r.Note = StatusNotRun, "not selected by -only "+c.only.String()
		return r
	}
	var stdout, stderr []byte
	var runErr error
	if c.replay != "" {
		var err error
		stdout, err = os.ReadFile(filepath.Join(c.replay, s.ID+".txt"))
		if errors.Is(err, os.ErrNotExist) {
			r.Status, r.Note = StatusNotRun, "no saved output in "+c.replay
			return r
		}
		if err != nil {
			r.Status, r.Note = StatusFailed, err.Error()
			return r
		}
		stderr, _ = os.ReadFile(filepath.Join(c.replay, s.ID+".stderr.txt"))
	} else {
		fmt.Fprintf(c.log, "report: %s: %s\n", s.ID, r.Command())
		var outBuf, errBuf bytes.Buffer
		cmd := exec.CommandContext(ctx, "go", r.Args...)
		cmd.Dir = filepath.Join(c.benchDir, s.Dir)
		// On cancellation let go test stop its test binary, then give up.
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 15 * time.Second
		cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
		if c.verbose {
			cmd.Stdout = io.MultiWriter(&outBuf, c.log)
			cmd.Stderr = io.MultiWriter(&errBuf, c.log)
		}
		start := time.Now()
		runErr = cmd.Run()
		r.Elapsed = time.Since(start).Round(time.Second)
		stdout, stderr = outBuf.Bytes(), errBuf.Bytes()
		if c.rawDir != "" {
			if err := saveRaw(c.rawDir, s.ID, stdout, stderr); err != nil {
				fmt.Fprintf(c.log, "report: %s: saving raw output: %v\n", s.ID, err)
			}
		}
	}
	out, err := parseOutput(bytes.NewReader(stdout))
	if err != nil {
		r.Status, r.Note = StatusFailed, "reading the output: "+err.Error()
		return r
	}
	r.Output = out
	r.Tables = buildTables(out.Results)
	r.classify(stdout, stderr, runErr)
	if c.replay == "" {
		fmt.Fprintf(c.log, "report: %s: %s in %v (%d results)\n", s.ID, r.Status, r.Elapsed, len(out.Results))
	}
	return r
}

// classify sets Status, Note and Detail from the parsed output and how the
// process exited.
func (r *suiteRun) classify(stdout, stderr []byte, runErr error) {
	failedOutput := bytes.Contains(stdout, []byte("\nFAIL")) || bytes.HasPrefix(stdout, []byte("FAIL"))
	var exitErr *exec.ExitError
	switch {
	case runErr != nil && !errors.As(runErr, &exitErr):
		r.Status, r.Note = StatusFailed, runErr.Error()
	case bytes.Contains(stdout, []byte("[build failed]")) || bytes.Contains(stdout, []byte("[setup failed]")):
		r.Status, r.Note = StatusFailed, "the bench package does not build"
	case runErr != nil || failedOutput || len(r.Output.Failed) > 0:
		r.Status = StatusFailed
		if len(r.Output.Results) > 0 {
			r.Status = StatusPartial
		}
		r.Note = "go test failed"
		if len(r.Output.Failed) > 0 {
			r.Note += ": " + strings.Join(r.Output.Failed, ", ")
		}
	case len(r.Output.Results) == 0:
		r.Status, r.Note = StatusNotRun, "no benchmark matches "+r.benchRegexp()+" yet"
		return
	default:
		r.Status = StatusOK
		return
	}
	r.Detail = tail(string(stderr)+string(stdout), 20)
}

func (r *suiteRun) benchRegexp() string {
	for i, a := range r.Args {
		if a == "-bench" && i+1 < len(r.Args) {
			return "`" + r.Args[i+1] + "`"
		}
	}
	return "the -bench regexp"
}

// tail returns the last n non-empty lines of s.
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func saveRaw(dir, id string, stdout, stderr []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, id+".txt"), stdout, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, id+".stderr.txt"), stderr, 0o644)
}

// shellJoin quotes args for a POSIX shell, leaving plain words bare.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
