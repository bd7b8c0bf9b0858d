package cache_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/ttlkit/ttlkit/cache"
	"github.com/ttlkit/ttlkit/timingwheel"
)

func Example() {
	c, err := cache.New(cache.Options[string, int]{TTL: time.Minute, Limit: 10_000})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	c.Set("answer", 42)
	if v, ok := c.Get("answer"); ok {
		fmt.Println("answer:", v)
	}
	c.Delete("answer")
	_, ok := c.Get("answer")
	fmt.Println("after Delete:", ok)
	// Output:
	// answer: 42
	// after Delete: false
}

func ExampleCache_Take() {
	c, err := cache.New(cache.Options[int, string]{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	loads := 0
	load := func() (string, error) {
		loads++
		return "user-7", nil
	}
	for range 3 {
		v, err := c.Take(7, load) // loads once, then hits
		fmt.Println(v, err)
	}
	_, err = c.Take(8, func() (string, error) { return "", errors.New("db down") })
	fmt.Println(err)
	st := c.Stats()
	fmt.Println("loads:", loads, "hits:", st.Hits, "load errors:", st.LoadErrors)
	// Output:
	// user-7 <nil>
	// user-7 <nil>
	// user-7 <nil>
	// db down
	// loads: 1 hits: 2 load errors: 1
}

func ExampleOptions_onEvict() {
	c, err := cache.New(cache.Options[string, int]{
		TTL:   time.Minute,
		Limit: 2,
		OnEvict: func(e cache.Event[string, int]) {
			fmt.Println(e.Reason, e.Key, e.Value)
		},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	c.Set("a", 1)
	c.Set("b", 2)
	c.Get("a")    // a is used twice, b once
	c.Set("c", 3) // full: b goes
	c.Set("a", 10)
	c.Delete("c")
	c.SetWithExpire("a", 0, 0) // ttl <= 0 deletes
	// Output:
	// Evicted b 2
	// Replaced a 1
	// Deleted c 3
	// Deleted a 10
}

func ExampleCache_All() {
	c, err := cache.New(cache.Options[string, int]{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	c.Set("x", 1)
	c.Set("y", 2)
	sum := 0
	for _, v := range c.All() {
		sum += v
	}
	fmt.Println("sum:", sum)
	// Output:
	// sum: 3
}

func ExampleCache_GetOrSet() {
	c, err := cache.New(cache.Options[string, string]{TTL: time.Minute})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	v, loaded := c.GetOrSet("lang", "go") // stores
	fmt.Println(v, loaded)
	v, loaded = c.GetOrSet("lang", "rust") // finds the stored value
	fmt.Println(v, loaded)
	fmt.Println(c.SetIfAbsent("lang", "zig"), c.SetIfAbsent("editor", "vi"))
	if left, ok := c.Remaining("editor"); ok && left <= time.Minute {
		fmt.Println("editor lives at most a minute more")
	}
	// Output:
	// go false
	// go true
	// false true
	// editor lives at most a minute more
}

func ExampleOptions_onPanic() {
	c, err := cache.New(cache.Options[string, int]{
		TTL: time.Minute,
		OnEvict: func(e cache.Event[string, int]) {
			panic("cleanup failed for " + e.Key)
		},
		OnPanic: func(e cache.Event[string, int], p *timingwheel.PanicError) {
			fmt.Println("recovered:", p.Value, "on", e.Reason)
		},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	c.Set("a", 1)
	c.Delete("a") // OnEvict panics; Delete returns normally
	fmt.Println("len:", c.Len())
	// Output:
	// recovered: cleanup failed for a on Deleted
	// len: 0
}
