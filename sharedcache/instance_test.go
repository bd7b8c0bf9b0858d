package sharedcache

// The tests run instances as real processes: the test binary re-executed
// with SHAREDCACHE_INSTANCE set runs one Cache[string] and obeys commands,
// one per line on stdin, each "ID VERB ARGS"; it answers "ID RESULT" and
// reports asynchronous events as "! EVENT ARGS".
//
//	get K        -> ID ok V | ID notfound | ID err MSG
//	set K V      -> ID ok UNIXNANO (the wall clock when Set returned)
//	del K        -> ID ok
//	take K       -> ID ok V ... (the loader reports "! loading K" and
//	                returns "loaded-by-NAME" once "release K" arrives)
//	release K    -> ID ok (a loader started later returns at once)
//	takenow K    -> ID ok V ... (a Take whose loader returns at once)
//	watch K V    -> ID ok UNIXNANO (when a Get first returned V; events wake it,
//	                and a store error retries within 100ms; "! watch K saw V ERR"
//	                for each other answer)
//	pastfresh K  -> ID ok once K's local copy is past its deadline (LocalTTL),
//	                at once if it has none
//	stats        -> ID ok JSON
//
// The environment sets the options: SHAREDCACHE_LEASE_TTL, _LEASE_WAIT,
// _LOCAL_TTL, _STALE_IF_ERROR (durations; unset means the default).
//
// Events: "! waiting K" (a Take waits for another instance's load),
// "! resumed" (a watch runs again after a reconnect).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("SHAREDCACHE_INSTANCE") != "" {
		os.Exit(runInstance())
	}
	os.Exit(m.Run())
}

func runInstance() int {
	name := os.Getenv("SHAREDCACHE_INSTANCE")
	var outMu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	say := func(format string, args ...any) {
		outMu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
		outMu.Unlock()
	}

	var wmu sync.Mutex
	wake := map[string]chan struct{}{}
	wakeCh := func(key string) chan struct{} {
		wmu.Lock()
		defer wmu.Unlock()
		if wake[key] == nil {
			wake[key] = make(chan struct{})
		}
		return wake[key]
	}
	testHookChanged = func(_ any, key string, rev uint64) {
		wmu.Lock()
		if ch := wake[key]; ch != nil {
			close(ch)
			delete(wake, key)
		}
		wmu.Unlock()
	}
	testHookWaiting = func(key string) { say("! waiting %s", key) }
	testHookResumed = func() { say("! resumed") }

	var store Store
	var err error
	if os.Getenv("SHAREDCACHE_STORE") == "redis" {
		var rs *RedisStore
		rs, err = Redis(RedisConfig{Addr: os.Getenv("SHAREDCACHE_URL")})
		if err == nil {
			defer rs.Close()
			store = rs
		}
	} else {
		var ns *NATSStore
		ns, err = NATS(NATSConfig{URL: os.Getenv("SHAREDCACHE_URL"), Bucket: "test"})
		if err == nil {
			defer ns.Close()
			store = ns
		}
	}
	if err != nil {
		say("! fatal %v", err)
		return 1
	}
	leaseTTL, _ := time.ParseDuration(os.Getenv("SHAREDCACHE_LEASE_TTL"))
	leaseWait, _ := time.ParseDuration(os.Getenv("SHAREDCACHE_LEASE_WAIT"))
	localTTL, _ := time.ParseDuration(os.Getenv("SHAREDCACHE_LOCAL_TTL"))
	staleIfError, _ := time.ParseDuration(os.Getenv("SHAREDCACHE_STALE_IF_ERROR"))
	ctx := context.Background()
	c, err := New[string](ctx, store, Options[string]{
		TTL: time.Hour, LeaseTTL: leaseTTL, LeaseWait: leaseWait,
		LocalTTL: localTTL, StaleIfError: staleIfError,
	})
	if err != nil {
		say("! fatal %v", err)
		return 1
	}
	defer c.Close()

	var rmu sync.Mutex
	releases := map[string]chan struct{}{}
	release := func(key string) chan struct{} {
		rmu.Lock()
		defer rmu.Unlock()
		if releases[key] == nil {
			releases[key] = make(chan struct{})
		}
		return releases[key]
	}
	result := func(id string, v string, err error) {
		switch {
		case errors.Is(err, ErrNotFound):
			say("%s notfound", id)
		case err != nil:
			say("%s err %v", id, err)
		default:
			say("%s ok %s", id, v)
		}
	}

	say("! ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) < 2 {
			continue
		}
		id, verb, args := f[0], f[1], f[2:]
		switch verb {
		case "get":
			v, err := c.Get(ctx, args[0])
			result(id, v, err)
		case "set":
			err := c.Set(ctx, args[0], args[1])
			result(id, fmt.Sprint(time.Now().UnixNano()), err)
		case "del":
			result(id, "", c.Delete(ctx, args[0]))
		case "release": // idempotent
			ch := release(args[0])
			select {
			case <-ch:
			default:
				close(ch)
			}
			result(id, "", nil)
		case "take":
			go func() {
				v, err := c.Take(ctx, args[0], func(context.Context) (string, error) {
					say("! loading %s", args[0])
					<-release(args[0])
					return "loaded-by-" + name, nil
				})
				result(id, v, err)
			}()
		case "takenow":
			go func() {
				v, err := c.Take(ctx, args[0], func(context.Context) (string, error) {
					return "loaded-by-" + name, nil
				})
				result(id, v, err)
			}()
		case "watch":
			go func() {
				for {
					ch := wakeCh(args[0])
					v, err := c.Get(ctx, args[0])
					if err == nil && v == args[1] {
						result(id, fmt.Sprint(time.Now().UnixNano()), nil)
						return
					}
					say("! watch %s saw %q %v", args[0], v, err)
					if err != nil && !errors.Is(err, ErrNotFound) {
						// A store error (a timeout on a loaded machine, a
						// reconnect) may pass with no event: retry soon.
						select {
						case <-ch:
						case <-time.After(100 * time.Millisecond):
						}
						continue
					}
					<-ch
				}
			}()
		case "pastfresh":
			go func() {
				// Without StaleIfError L1 drops the copy at its own
				// deadline, which SetWithExpire sets a moment after fresh
				// (it reads the clock again): wait for the later of the two,
				// or a Get just after fresh may still find the copy (it did
				// once in TestStaleIfErrorStoreDown, under load).
				if e, ok := c.l1.Peek(args[0]); ok {
					wait := e.fresh - time.Since(c.born)
					if r, ok := c.l1.Remaining(args[0]); ok && c.opts.StaleIfError == 0 {
						wait = max(wait, r)
					}
					<-time.After(wait)
				}
				result(id, "", nil)
			}()
		case "stats":
			b, _ := json.Marshal(c.Stats())
			result(id, string(b), nil)
		default:
			say("%s err unknown verb %q", id, verb)
		}
	}
	return 0
}

// instance is a running instance process, seen from the test.
type instance struct {
	t      testing.TB
	name   string
	cmd    *exec.Cmd
	stdin  *bufio.Writer
	mu     sync.Mutex
	nextID int
	calls  map[string]chan string
	log    []string // the last events (logKeep or more), for failure messages; guarded by mu
	events chan string
	exited chan struct{}
}

// logKeep is how many of an instance's last events a failure message shows.
const logKeep = 50

// startInstance starts an instance on the server at url and waits for it
// to be ready.
func startInstance(t testing.TB, name, url string, env ...string) *instance {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"SHAREDCACHE_INSTANCE=" + name, "SHAREDCACHE_URL=" + url}, env...)...)
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &instance{t: t, name: name, cmd: cmd, stdin: bufio.NewWriter(w), calls: map[string]chan string{}, events: make(chan string, 1000), exited: make(chan struct{})}
	go func() {
		defer close(in.exited)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			id, rest, _ := strings.Cut(sc.Text(), " ")
			if id == "!" {
				in.mu.Lock()
				in.log = append(in.log, rest)
				if len(in.log) > 2*logKeep {
					in.log = append(in.log[:0], in.log[len(in.log)-logKeep:]...)
				}
				in.mu.Unlock()
				select {
				case in.events <- rest:
				default: // nobody awaits them (a long benchmark): the log keeps the last
				}
				continue
			}
			in.mu.Lock()
			ch := in.calls[id]
			delete(in.calls, id)
			in.mu.Unlock()
			if ch != nil {
				ch <- rest
			}
		}
	}()
	t.Cleanup(func() {
		w.Close()
		select {
		case <-in.exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
		cmd.Wait()
	})
	in.await("ready")
	return in
}

// send starts a command and returns the channel its answer arrives on.
func (in *instance) send(format string, args ...any) chan string {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.nextID++
	id := fmt.Sprint(in.nextID)
	ch := make(chan string, 1)
	in.calls[id] = ch
	fmt.Fprintf(in.stdin, id+" "+format+"\n", args...)
	if err := in.stdin.Flush(); err != nil {
		in.t.Fatalf("%s: %v", in.name, err)
	}
	return ch
}

// answer waits for the answer on ch.
func (in *instance) answer(ch chan string) string {
	in.t.Helper()
	select {
	case a := <-ch:
		return a
	case <-in.exited:
		in.t.Fatalf("%s exited", in.name)
	case <-time.After(30 * time.Second):
		in.cmd.Process.Signal(syscall.SIGQUIT) // its goroutines, on stderr
		in.mu.Lock()
		log := in.log
		in.mu.Unlock()
		in.t.Fatalf("%s: no answer in 30s; its last events: %q", in.name, log)
	}
	return ""
}

// call sends a command and waits for its answer.
func (in *instance) call(format string, args ...any) string {
	in.t.Helper()
	return in.answer(in.send(format, args...))
}

// await waits for the event ev, skipping others.
func (in *instance) await(ev string) {
	in.t.Helper()
	for {
		select {
		case e := <-in.events:
			if strings.HasPrefix(e, "fatal") {
				in.t.Fatalf("%s: %s", in.name, e)
			}
			if e == ev {
				return
			}
		case <-in.exited:
			in.t.Fatalf("%s exited waiting for %q", in.name, ev)
		case <-time.After(30 * time.Second):
			in.t.Fatalf("%s: no %q in 30s", in.name, ev)
		}
	}
}

func (in *instance) stats() Stats {
	in.t.Helper()
	a := in.call("stats")
	var s Stats
	if err := json.Unmarshal([]byte(strings.TrimPrefix(a, "ok ")), &s); err != nil {
		in.t.Fatalf("%s stats %q: %v", in.name, a, err)
	}
	return s
}
