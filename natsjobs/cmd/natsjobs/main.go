// Command natsjobs inspects and operates the queues of package natsjobs
// on a NATS server: list and show jobs, cancel them, pause and resume
// queues, redrive or delete dead letters, and print counts and rates.
//
//	natsjobs --url nats://jobs.internal:4222 --creds ops.creds queues
//	natsjobs ls orders --state pending --prefix order-
//	natsjobs show orders order-1042
//	natsjobs dead redrive orders --all
//
// It connects as an administrative client (natsjobs.Config with URL and
// no Queues): it creates nothing and sees every queue on the server.
// Output is an aligned table, or JSON with --json. Exit codes: 0 success,
// 1 failure, 2 bad usage, 3 server unreachable or credentials refused,
// 4 queue, job or dead letter not found. Run with no arguments for help.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/ttlkit/ttlkit/natsjobs"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitUnavailable = 3
	exitNotFound    = 4
)

const usage = `usage: natsjobs [flags] <command> [arguments]

Commands:
  queues                         every queue with its counts
  ls QUEUE [--state S] [--prefix P] [--limit N] [--after CURSOR]
                                 jobs in state S (pending, scheduled, running, dead;
                                 default pending), a page at a time
  show QUEUE ID                  one job: payload, headers, attempts, last error, next run
  cancel QUEUE ID...             remove jobs (a run in progress finishes)
  pause QUEUE                    workers stop taking the queue's jobs (kept across restarts)
  resume QUEUE                   workers take them again
  purge QUEUE --yes              remove every job of the queue that is not dead
  dead ls QUEUE [--prefix P] [--limit N] [--after CURSOR]
  dead redrive QUEUE (ID... | --prefix P | --all)
                                 run dead letters again
  dead rm QUEUE (ID... | --prefix P | --all)
                                 delete dead letters
  stats QUEUE... [--interval D]  counts and, over D (default 1s; 0: none), rates

Flags (before or after the command):
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// globals are the connection and output flags every command takes.
type globals struct {
	url, creds, nkey, user, password, token string
	tlsCA, tlsCert, tlsKey                  string
	timeout                                 time.Duration
	json                                    bool
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.url, "url", envOr("NATS_URL", nats.DefaultURL), "server URL, or several separated by commas ($NATS_URL)")
	fs.StringVar(&g.creds, "creds", "", "credentials file (user JWT and nkey seed)")
	fs.StringVar(&g.nkey, "nkey", "", "nkey seed file")
	fs.StringVar(&g.user, "user", "", "user name")
	fs.StringVar(&g.password, "password", os.Getenv("NATS_PASSWORD"), "password ($NATS_PASSWORD)")
	fs.StringVar(&g.token, "token", os.Getenv("NATS_TOKEN"), "authentication token ($NATS_TOKEN)")
	fs.StringVar(&g.tlsCA, "tls-ca", "", "CA certificate file to verify the server")
	fs.StringVar(&g.tlsCert, "tls-cert", "", "client certificate file (with --tls-key)")
	fs.StringVar(&g.tlsKey, "tls-key", "", "client key file (with --tls-cert)")
	fs.DurationVar(&g.timeout, "timeout", 5*time.Second, "timeout of each request to the server")
	fs.BoolVar(&g.json, "json", false, "print JSON instead of tables")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// options returns the client options for the flags.
func (g *globals) options() ([]nats.Option, error) {
	opts := []nats.Option{nats.Name("natsjobs-cli")}
	if g.creds != "" {
		opts = append(opts, nats.UserCredentials(g.creds))
	}
	if g.nkey != "" {
		o, err := nats.NkeyOptionFromSeed(g.nkey)
		if err != nil {
			return nil, usageErr("--nkey %s: %v", g.nkey, err)
		}
		opts = append(opts, o)
	}
	if g.user != "" || g.password != "" {
		if g.user == "" {
			return nil, usageErr("--password without --user")
		}
		opts = append(opts, nats.UserInfo(g.user, g.password))
	}
	if g.token != "" {
		opts = append(opts, nats.Token(g.token))
	}
	if (g.tlsCert == "") != (g.tlsKey == "") {
		return nil, usageErr("--tls-cert and --tls-key go together")
	}
	for _, f := range []string{g.creds, g.tlsCA, g.tlsCert, g.tlsKey} {
		if f == "" {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			return nil, usageErr("%v", err)
		}
	}
	if g.tlsCA != "" {
		opts = append(opts, nats.RootCAs(g.tlsCA))
	}
	if g.tlsCert != "" {
		opts = append(opts, nats.ClientCert(g.tlsCert, g.tlsKey))
	}
	return opts, nil
}

// errUsage marks an error in the command line.
var errUsage = errors.New("usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// parse parses fs's flags anywhere among args and returns the others.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		if args = fs.Args(); len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// run is the command: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintln(stderr, "natsjobs:", strings.TrimPrefix(err.Error(), "natsjobs: "))
	switch {
	case errors.Is(err, errUsage), errors.Is(err, natsjobs.ErrInvalid):
		fmt.Fprintln(stderr, "run natsjobs --help for usage")
		return exitUsage
	case errors.Is(err, natsjobs.ErrUnavailable):
		return exitUnavailable
	case errors.Is(err, natsjobs.ErrNotFound):
		return exitNotFound
	}
	return exitFailed
}

// command is one subcommand: the flags it takes besides the global ones,
// and what it does with the positional arguments.
type command struct {
	flags []string
	run   func(ctx context.Context, c *natsjobs.Client, args []string) error
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var g globals
	var f cmdFlags
	fs := flag.NewFlagSet("natsjobs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	g.register(fs)
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
		fmt.Fprint(stderr, "\nExit codes: 0 ok, 1 failed, 2 usage, 3 unreachable or refused, 4 not found.\n")
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return usageErr("no command")
	}
	name, pos := pos[0], pos[1:]
	if name == "dead" {
		if len(pos) == 0 {
			return usageErr("dead: want ls, redrive or rm")
		}
		name, pos = "dead "+pos[0], pos[1:]
	}
	cmd, ok := commands(&out{w: stdout, json: g.json}, &f)[name]
	if !ok {
		return usageErr("unknown command %q", name)
	}
	var wrong error
	fs.Visit(func(fl *flag.Flag) {
		if f.owns(fl.Name) && !slices.Contains(cmd.flags, fl.Name) && wrong == nil {
			wrong = usageErr("%s takes no --%s", name, fl.Name)
		}
	})
	if wrong != nil {
		return wrong
	}
	opts, err := g.options()
	if err != nil {
		return err
	}
	if g.timeout <= 0 {
		return usageErr("--timeout must be positive")
	}
	c, err := natsjobs.Open(ctx, natsjobs.Config{URL: g.url, Options: opts, Timeout: g.timeout})
	if err != nil {
		return err
	}
	defer c.Close()
	return cmd.run(ctx, c, pos)
}

// wantArgs checks the count of positional arguments.
func wantArgs(args []string, min, max int, what string) error {
	if len(args) < min || (max >= 0 && len(args) > max) {
		return usageErr("want %s", what)
	}
	return nil
}
