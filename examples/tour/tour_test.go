// Package tour_test holds the snippets of the README's Tour section, each
// verbatim as the body of an Example, so that they compile, run and print
// what the README says; TestREADMEMatches fails when the two drift apart.
package tour_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/cache"
	"github.com/ttlkit/ttlkit/collection"
	"github.com/ttlkit/ttlkit/idletimeout"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/safemap"
	"github.com/ttlkit/ttlkit/timingwheel"
)

func Example_timingwheel() {
	fired := make(chan string)
	tw, err := timingwheel.New(10*time.Millisecond, 512, func(key string, attempt int) {
		fired <- fmt.Sprintf("%s, attempt %d", key, attempt) // on a worker goroutine
	})
	if err != nil {
		panic(err)
	}
	defer tw.Stop()

	// Errors: ErrArgument for a delay <= 0, ErrClosed after Stop.
	tw.SetTimer("retry:42", 1, 20*time.Millisecond) // on the first tick at or after 20ms
	tw.SetTimer("reminder", 7, time.Hour)
	tw.MoveTimer("reminder", 2*time.Hour) // O(1): a later deadline only rewrites a number
	tw.RemoveTimer("reminder")            // releases key and value at once
	fmt.Println("pending:", tw.Len())     // counts every call made before it
	fmt.Println("due:", <-fired)
	// Output:
	// pending: 1
	// due: retry:42, attempt 1
}

func Example_cache() {
	expired := make(chan string, 1)
	c, err := cache.New(cache.Options[string, string]{
		TTL:   time.Minute, // never returned after its TTL; each Set restarts it
		Limit: 10_000,      // beyond it, W-TinyLFU picks the entry to evict
		// Expired entries are reclaimed within a Resolution (default TTL/100).
		Resolution: 10 * time.Millisecond,
		OnEvict: func(e cache.Event[string, string]) {
			if e.Reason == cache.Expired {
				expired <- e.Key
			}
		},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	user, err := c.Take("user:1", func() (string, error) {
		return "Ada", nil // concurrent Takes of one key run this once
	})
	fmt.Println(user, err)
	c.SetWithExpire("otp:1", "424242", 20*time.Millisecond)
	fmt.Println("expired:", <-expired)
	_, ok := c.Get("otp:1")
	fmt.Println("otp:1 present:", ok)
	// Output:
	// Ada <nil>
	// expired: otp:1
	// otp:1 present: false
}

func Example_cacheLoader() {
	db := map[int]string{1: "Ada", 2: "Grace"}
	refreshed := make(chan struct{})
	users, err := cache.New(cache.Options[int, string]{
		TTL:          time.Hour,
		RefreshAfter: 30 * time.Minute, // older: a read reloads it in the background
		NotFoundTTL:  time.Minute,      // "no such user" is remembered too
		Loader: func(ctx context.Context, id int) (cache.Loaded[string], error) {
			name, ok := db[id] // once per key, however many callers wait
			if !ok {
				return cache.Loaded[string]{NotFound: true}, nil
			}
			return cache.Loaded[string]{Value: name}, nil // TTL: set it per value
		},
		OnEvict: func(e cache.Event[int, string]) {
			if e.Reason == cache.Replaced {
				close(refreshed)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	defer users.Close()

	ctx := context.Background()
	name, err := users.Load(ctx, 1)
	fmt.Println(name, err)
	_, err = users.Load(ctx, 9)
	fmt.Println(err)
	all, err := users.LoadAll(ctx, []int{1, 2, 9}) // a BulkLoader makes it one call
	fmt.Println(all, err)

	db[1] = "Ada Lovelace"
	users.Refresh(1) // what RefreshAfter starts on a read; readers keep "Ada" meanwhile
	<-refreshed
	name, _ = users.Get(1)
	fmt.Println(name)
	// Output:
	// Ada <nil>
	// cache: not found
	// map[1:Ada 2:Grace] <nil>
	// Ada Lovelace
}

func Example_idletimeout() {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	// Accepted connections are closed after 50ms without a byte either way.
	// With net/http: srv.ConnState = idletimeout.ConnState; srv.Serve(l).
	l, err := idletimeout.NewListener(tcp, idletimeout.Config{IdleTimeout: 50 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	defer l.Close()

	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	conn, err := l.Accept()
	if err != nil {
		panic(err)
	}
	_, err = conn.Read(make([]byte, 1)) // the client sends nothing
	fmt.Println(errors.Is(err, idletimeout.ErrIdle), l.Stats().ReapedIdle)
	// Output: true 1
}

func Example_safemap() {
	var m safemap.SafeMap[string, int] // the zero value is ready; safe for concurrent use
	for i := range 100_000 {
		m.Set(fmt.Sprint("user:", i), i)
	}
	for i := range 99_990 {
		m.Delete(fmt.Sprint("user:", i)) // the tables shrink as it empties
	}
	n, ok := m.Get("user:99995")
	fmt.Println(n, ok, m.Len())

	// Range holds no lock while f runs, so f may change the map.
	m.Range(func(key string, n int) bool {
		if n%2 == 1 {
			m.Delete(key)
		}
		return true
	})
	fmt.Println(m.Len())
	// Output:
	// 99995 true 10
	// 5
}

func Example_jobs() {
	gaveUp := make(chan jobs.DeadLetter, 1)
	s, err := jobs.New(jobs.Options{
		Defaults: jobs.JobOptions{
			Retry:      jobs.Retry{Attempts: 3, Base: 10 * time.Millisecond}, // backoff 10ms, 20ms
			DeadLetter: func(d jobs.DeadLetter) { gaveUp <- d },              // once per failed occurrence
		},
	})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background()) // waits for running jobs

	timedOut := make(chan string, 2)
	cancelUnpaid := func(ctx context.Context, r jobs.Run) error {
		timedOut <- r.ID // on a worker; ctx ends on Cancel, Timeout or Shutdown
		return nil
	}
	// Errors: ErrDuplicate, ErrClosed, ErrInvalid (empty ID, nil Func, d <= 0).
	s.Add("order:1", jobs.After(20*time.Millisecond), cancelUnpaid)
	s.Add("order:2", jobs.After(20*time.Millisecond), cancelUnpaid)
	s.Cancel("order:2") // paid in time: it never runs

	nightly, err := jobs.Cron("CRON_TZ=UTC 0 30 2 * * *") // seconds first; 5 fields work too
	s.Add("report", nightly, func(context.Context, jobs.Run) error { return nil })
	s.Add("sync", jobs.After(time.Millisecond), func(context.Context, jobs.Run) error {
		return errors.New("upstream down") // a panic would be retried too
	})
	fmt.Println("cancelled unpaid:", <-timedOut)
	d := <-gaveUp
	fmt.Println("dead letter:", d.ID, d.Attempts, d.Err)
	fmt.Println("scheduled:", s.Len()) // report
	// Output:
	// cancelled unpaid: order:1
	// dead letter: sync 3 upstream down
	// scheduled: 1
}

func Example_collection() {
	// go-zero code compiles unchanged with one import path changed:
	//   github.com/zeromicro/go-zero/core/collection
	//   github.com/ttlkit/ttlkit/collection
	c, err := collection.NewCache(time.Minute, collection.WithLimit(1000))
	if err != nil {
		panic(err)
	}
	defer c.Close() // go-zero's Cache has no Close and leaks its goroutines
	c.Set("k", "v")
	fmt.Println(c.Get("k"))

	done := make(chan any)
	tw, err := collection.NewTimingWheel(10*time.Millisecond, 60, func(key, value any) {
		done <- value
	})
	if err != nil {
		panic(err)
	}
	defer tw.Stop() // may be called twice, unlike go-zero's
	tw.SetTimer("job", "ran", time.Minute)
	tw.MoveTimer("job", time.Millisecond) // under one interval: fires once, on the next tick
	fmt.Println(<-done)
	// Output:
	// v true
	// ran
}

// fenceRE matches a fenced Go block of the README.
var fenceRE = regexp.MustCompile("(?s)```go\n(.*?\n)```")

// TestREADMEMatches checks that each Go block of the README's Tour section
// is, verbatim, the body of one of the Examples above, so the README shows
// code that compiles and prints what it says.
func TestREADMEMatches(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("tour_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, tour, ok := strings.Cut(string(readme), "\n## Tour\n")
	if !ok {
		t.Fatal("README.md has no ## Tour section")
	}
	if end := strings.Index(tour, "\n## "); end >= 0 {
		tour = tour[:end]
	}
	blocks := fenceRE.FindAllStringSubmatch(tour, -1)
	if got, want := len(blocks), 7; got != want {
		t.Fatalf("got %d Go blocks in the Tour section, want %d (one per package, two for cache)", got, want)
	}
	for _, b := range blocks {
		// As a function body, each non-empty line is indented one tab.
		lines := strings.Split(strings.TrimSuffix(b[1], "\n"), "\n")
		for i, l := range lines {
			if l != "" {
				lines[i] = "\t" + l
			}
		}
		body := "() {\n" + strings.Join(lines, "\n") + "\n}\n"
		if !strings.Contains(string(src), body) {
			t.Errorf("README block is not the body of an Example in tour_test.go:\n%s", b[1])
		}
	}
}
