package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ttlkit/ttlkit/cache"
)

// tourExpiry shows that an entry is gone the moment its TTL has passed, and
// that Touch pushes its deadline one TTL later.
func tourExpiry(n *narrator) error {
	const ttl = 100 * time.Millisecond
	c, err := cache.New(cache.Options[string, string]{TTL: ttl})
	if err != nil {
		return err
	}
	defer c.Close()

	get := func(key, why string) {
		if v, ok := c.Get(key); ok {
			n.say("get    %-8s hit: %s%s", key, v, why)
		} else {
			n.say("get    %-8s miss%s", key, why)
		}
	}

	c.Set("alice", "tea")
	aliceSet := time.Now() // alice's deadline is at most ttl after this
	n.say("set    alice    tea")
	c.Set("bob", "coffee")
	n.say("set    bob      coffee")

	n.at(50 * time.Millisecond)
	get("alice", "")

	n.at(60 * time.Millisecond)
	c.Touch("bob") // a later deadline is only recorded in the entry
	bobSet := time.Now()
	n.say("touch  bob      his TTL restarts, value kept")

	// Wait until the deadline has certainly passed: Get never returns an
	// entry at or after its deadline, even before the wheel reclaims it.
	time.Sleep(time.Until(aliceSet.Add(ttl)))
	get("alice", ": expired on time")

	n.at(120 * time.Millisecond)
	get("bob", ", past his first deadline")

	time.Sleep(time.Until(bobSet.Add(ttl)))
	get("bob", ": expired 100ms after his refresh")

	// The wheel reclaims an expired entry within a tick of its deadline;
	// until then Len counts it.
	n.at(200 * time.Millisecond)
	n.say("len    %d: the wheel has reclaimed both", c.Len())
	return nil
}

// tourEviction fills a cache limited to two entries and adds a third: the
// entry that was not read since it was written makes room.
func tourEviction(n *narrator) error {
	// Evicted events are delivered on the goroutine that calls Set, before
	// Set returns, so this one collects them without a lock.
	var evicted []string
	c, err := cache.New(cache.Options[string, int]{
		TTL:   time.Minute,
		Limit: 2,
		OnEvict: func(e cache.Event[string, int]) {
			evicted = append(evicted, fmt.Sprintf("%s (%s)", e.Key, e.Reason))
		},
	})
	if err != nil {
		return err
	}
	defer c.Close()

	c.Set("a", 1)
	c.Set("b", 2)
	n.say("set    a, b")
	c.Get("a")
	n.say("get    a        a is now recently used")
	c.Set("c", 3)
	n.say("set    c        evicts %s", strings.Join(evicted, ", "))
	var held []string
	for _, k := range []string{"a", "b", "c"} {
		if _, ok := c.Get(k); ok {
			held = append(held, k)
		}
	}
	n.say("held   %s", strings.Join(held, ", "))
	return nil
}

// tourTake has two goroutines ask for the same missing key at once: one
// fetch runs, and both receive its value.
func tourTake(n *narrator) error {
	c, err := cache.New(cache.Options[string, string]{TTL: time.Minute})
	if err != nil {
		return err
	}
	defer c.Close()

	var fetches atomic.Int32
	fetch := func() (string, error) {
		fetches.Add(1)
		n.say("fetch  user:7   from the database, which takes 50ms")
		time.Sleep(50 * time.Millisecond)
		return "Ada", nil
	}

	n.say("take   user:7   from two goroutines at once")
	type result struct {
		v   string
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			v, err := c.Take("user:7", fetch)
			results <- result{v, err}
		}()
	}
	var got []string
	for range 2 {
		r := <-results
		if r.err != nil {
			return r.err
		}
		got = append(got, r.v)
	}
	n.say("took   user:7   %s, with %d fetch", strings.Join(got, " and "), fetches.Load())

	v, err := c.Take("user:7", fetch)
	if err != nil {
		return err
	}
	n.say("take   user:7   %s from the cache, still %d fetch", v, fetches.Load())
	return nil
}
