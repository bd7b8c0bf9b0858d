package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// lines is an io.Writer that sends each write on a channel.
type lines chan string

func (l lines) Write(p []byte) (int, error) { l <- string(p); return len(p), nil }

func cmd(t *testing.T, store string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"-store", store, "-window", "4s"}, args...), &out); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out.String()
}

// Orders placed by one process, paid by a second, cancelled by a third:
// the timeouts outlive each process.
func TestTimeoutsOutliveTheProcess(t *testing.T) {
	store := t.TempDir()
	placed := time.Now() // before the jobs' due times are computed
	cmd(t, store, "place", "A-1", "A-2", "A-3")
	if got, want := cmd(t, store, "pay", "A-2", "B-9"), "paid A-2\nrefused B-9: not pending (cancelled already, or unknown)\n"; got != want {
		t.Errorf("pay output %q, want %q", got, want)
	}
	if got, want := cmd(t, store, "stats"), "scheduled 2, pending 0, running 0 (retrying 0), dead 0\n"; got != want {
		t.Errorf("stats %q, want %q", got, want)
	}

	out := make(lines, 10)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-store", store, "run"}, out) }()
	var got []string
	for range 2 {
		select {
		case l := <-out:
			got = append(got, strings.Fields(l)[1])
			if time.Since(placed) < 4*time.Second {
				t.Errorf("%q before the window ended", l)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("timeouts did not fire")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if want := []string{"A-1:", "A-3:"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("cancelled %v, want %v", got, want)
	}
	if got, want := cmd(t, store, "pay", "A-1"), "refused A-1: not pending (cancelled already, or unknown)\n"; got != want {
		t.Errorf("late payment: %q, want %q", got, want)
	}
}

// The worker process is killed with SIGKILL before the timeouts are due;
// a new one cancels every unpaid order anyway.
func TestKilledWorkerLosesNothing(t *testing.T) {
	if os.Getenv("DURABLE_CHILD_STORE") != "" {
		run(context.Background(), []string{"-store", os.Getenv("DURABLE_CHILD_STORE"), "run"}, os.Stdout)
		return
	}
	store := t.TempDir()
	cmd(t, store, "place", "K-1", "K-2")
	child := exec.Command(os.Args[0], "-test.run=^TestKilledWorkerLosesNothing$")
	child.Env = append(os.Environ(), "DURABLE_CHILD_STORE="+store)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	child.Process.Kill() // SIGKILL, whatever it was doing
	child.Wait()
	out := make(lines, 10)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go run(ctx, []string{"-store", store, "run"}, out)
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case l := <-out:
			seen[strings.Fields(l)[1]] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("after the kill only %v were cancelled", seen)
		}
	}
}

// Without -store, a command writes nothing into the working directory
// (the source tree, under go run): the store goes to the user's cache
// directory. Issue 20: the old default, ./durable-data, did.
func TestDefaultStoreOutsideWorkingDir(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache) // os.UserCacheDir on Linux and the BSDs
	t.Setenv("HOME", cache)           // on macOS, $HOME/Library/Caches
	wd := t.TempDir()
	t.Chdir(wd)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"stats"}, &out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "scheduled 0, pending 0, running 0 (retrying 0), dead 0\n"; got != want {
		t.Errorf("stats %q, want %q", got, want)
	}
	if entries, err := os.ReadDir(wd); err != nil || len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("working directory holds %v (err %v), want nothing", names, err)
	}
	store := defaultStore()
	if rel, err := filepath.Rel(cache, store); err != nil || !filepath.IsLocal(rel) {
		t.Errorf("default store %s, want it inside the user cache directory %s", store, cache)
	}
	if _, err := os.Stat(store); err != nil {
		t.Errorf("default store: %v, want the directory the server wrote", err)
	}
}
