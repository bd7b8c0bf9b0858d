package cache_test

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ttlkit/ttlkit/cache"
)

// users stands in for a database.
var users = map[int]string{1: "ada", 2: "grace", 3: "barbara"}

func ExampleOptions_loader() {
	loads := 0
	c, err := cache.New(cache.Options[int, string]{
		TTL:         time.Hour,
		NotFoundTTL: time.Minute, // remember "no such user" for a minute
		Loader: func(ctx context.Context, id int) (cache.Loaded[string], error) {
			loads++
			name, ok := users[id]
			if !ok {
				return cache.Loaded[string]{NotFound: true}, nil
			}
			return cache.Loaded[string]{Value: name}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	ctx := context.Background()
	for _, id := range []int{1, 1, 9, 9} {
		name, err := c.Load(ctx, id)
		fmt.Printf("%d: %q %v\n", id, name, err)
	}
	st := c.Stats()
	fmt.Println("loads:", loads, "hits:", st.Hits, "not-found hits:", st.NotFoundHits)
	// Output:
	// 1: "ada" <nil>
	// 1: "ada" <nil>
	// 9: "" cache: not found
	// 9: "" cache: not found
	// loads: 2 hits: 2 not-found hits: 1
}

func ExampleCache_LoadAll() {
	c, err := cache.New(cache.Options[int, string]{
		TTL: time.Hour,
		// One query for all the keys a LoadAll misses, like
		// SELECT id, name FROM users WHERE id IN (...).
		BulkLoader: func(ctx context.Context, ids []int) (map[int]cache.Loaded[string], error) {
			sort.Ints(ids)
			fmt.Println("query", ids)
			found := make(map[int]cache.Loaded[string], len(ids))
			for _, id := range ids {
				if name, ok := users[id]; ok {
					found[id] = cache.Loaded[string]{Value: name}
				} // left out: not found
			}
			return found, nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	c.Set(1, "ada")
	got, err := c.LoadAll(context.Background(), []int{1, 2, 3, 9})
	fmt.Println(got, err)
	got, err = c.LoadAll(context.Background(), []int{2, 3})
	fmt.Println(got, err)
	// Output:
	// query [2 3 9]
	// map[1:ada 2:grace 3:barbara] <nil>
	// map[2:grace 3:barbara] <nil>
}

// Expiry from the value: the loader gives each entry the TTL its source
// says (here, a max-age).
func ExampleLoaded_ttl() {
	maxAge := map[string]time.Duration{"/static/app.js": 24 * time.Hour, "/api/feed": 10 * time.Second}
	c, err := cache.New(cache.Options[string, string]{
		TTL: time.Hour,
		Loader: func(ctx context.Context, path string) (cache.Loaded[string], error) {
			return cache.Loaded[string]{Value: "body of " + path, TTL: maxAge[path]}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	for _, path := range []string{"/static/app.js", "/api/feed"} {
		c.Load(context.Background(), path)
		left, _ := c.Remaining(path)
		fmt.Println(path, left.Round(time.Second))
	}
	// Output:
	// /static/app.js 24h0m0s
	// /api/feed 10s
}

func ExampleOptions_refreshAfter() {
	version := 1
	replaced := make(chan struct{})
	c, err := cache.New(cache.Options[string, string]{
		TTL:          time.Hour,
		RefreshAfter: 30 * time.Minute, // older than this: reload in the background on a read
		Loader: func(ctx context.Context, key string) (cache.Loaded[string], error) {
			version++
			return cache.Loaded[string]{Value: fmt.Sprintf("%s v%d", key, version)}, nil
		},
		OnEvict: func(e cache.Event[string, string]) {
			if e.Reason == cache.Replaced {
				close(replaced) // the reload stored its value
			}
		},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	// An entry with 10 minutes left under a one-hour TTL is 50 minutes
	// old: due for refresh.
	c.SetWithExpire("config", "config v1", 10*time.Minute)
	v, _ := c.Get("config") // returns the current value, starts the reload
	fmt.Println(v)
	<-replaced
	v, _ = c.Get("config")
	fmt.Println(v)
	fmt.Println("refreshes:", c.Stats().Refreshes)
	// Output:
	// config v1
	// config v2
	// refreshes: 1
}

func ExampleCache_Refresh() {
	done := make(chan struct{})
	c, err := cache.New(cache.Options[string, int]{
		TTL: time.Hour,
		Loader: func(ctx context.Context, key string) (cache.Loaded[int], error) {
			return cache.Loaded[int]{Value: 2}, nil
		},
		OnEvict: func(e cache.Event[string, int]) { close(done) },
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	c.Set("k", 1)
	fmt.Println("started:", c.Refresh("k"))
	v, _ := c.Get("k") // 1 or 2: readers are not held up
	_ = v
	<-done // Replaced 1
	v, _ = c.Get("k")
	fmt.Println("after:", v)
	// Output:
	// started: true
	// after: 2
}

func ExampleOptions_expireAfterAccess() {
	c, err := cache.New(cache.Options[string, string]{
		TTL:               30 * time.Minute, // idle timeout
		ExpireAfterAccess: true,
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	c.SetWithExpire("session", "alice", time.Minute)
	left, _ := c.Remaining("session")
	fmt.Println("after the write:", left.Round(time.Minute))
	c.Get("session") // a use: the session lives 30 minutes from now
	left, _ = c.Remaining("session")
	fmt.Println("after a read:", left.Round(time.Minute))
	// Output:
	// after the write: 1m0s
	// after a read: 30m0s
}

func ExampleCache_Compute() {
	c, err := cache.New(cache.Options[string, int]{TTL: time.Hour})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	incr := func(old int, found bool) (int, cache.Action) { return old + 1, cache.Store }
	c.Compute("hits", incr)
	n, _ := c.Compute("hits", incr)
	fmt.Println("hits:", n)

	// Remove once it reaches zero, keep otherwise.
	c.Set("stock", 1)
	decr := func(old int, found bool) (int, cache.Action) {
		if !found {
			return 0, cache.Keep
		}
		if old <= 1 {
			return 0, cache.Remove
		}
		return old - 1, cache.Store
	}
	n, ok := c.Compute("stock", decr)
	fmt.Println("stock:", n, ok)
	// Output:
	// hits: 2
	// stock: 0 false
}
