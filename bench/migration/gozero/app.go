// Package app is a small session service written against go-zero's
// core/collection API: sessions expire on a TimingWheel unless used,
// profiles are loaded once into a Cache with Take, and the users online
// are kept in a SafeMap; its operations desk (desk.go) uses the package's
// Ring, Queue, Set and RollingWindow.
//
// This file is compiled twice, as bench/migration/gozero against go-zero
// v1.10.3 and as bench/migration/ttlkit against ttlkit's drop-in facade;
// the two copies differ only in the collection import path (the migration
// test checks that). Time advances by hand, one tick per step, through a
// ticker of our own passed to NewTimingWheelWithTicker, so the output is
// the same on every run.
package app

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/zeromicro/go-zero/core/collection"
)

// sessionTicks is how many ticks a session lives after its last use.
const sessionTicks = 3

// handTicker is a ticker advanced by hand. It has the shape of go-zero's
// timex.Ticker, so it can drive either wheel.
type handTicker struct{ c chan time.Time }

func (h *handTicker) Chan() <-chan time.Time { return h.c }
func (h *handTicker) Stop()                  {}

// Run plays the scripted day of the session service and writes its log to
// w.
func Run(w io.Writer) error {
	ticker := &handTicker{c: make(chan time.Time)}
	online := collection.NewSafeMap()
	expired := make(chan string, 16)
	sessions, err := collection.NewTimingWheelWithTicker(time.Second, 16, func(key, value any) {
		online.Del(key)
		expired <- key.(string)
	}, ticker)
	if err != nil {
		return err
	}
	defer sessions.Stop()

	profiles, err := collection.NewCache(time.Hour, collection.WithLimit(100), collection.WithName("profiles"))
	if err != nil {
		return err
	}
	loads := 0
	names := map[string]string{"alice": "Alice Liddell", "bob": "Bob Dylan", "carol": "Carol Danvers", "dave": "Dave Bowman"}

	tick := 0
	step := func() {
		ticker.c <- time.Now() // returns once the wheel has taken the tick
		tick++
	}
	// awaitExpiries waits for the n sessions the script expects to end on
	// this tick and logs them in order.
	awaitExpiries := func(n int) error {
		var users []string
		for range n {
			select {
			case u := <-expired:
				users = append(users, u)
			case <-time.After(5 * time.Second):
				return fmt.Errorf("tick %d: %d sessions expired, want %d", tick, len(users), n)
			}
		}
		slices.Sort(users)
		fmt.Fprintf(w, "tick %d: expired %s\n", tick, strings.Join(users, ", "))
		return nil
	}
	login := func(user string) error {
		fresh := false
		profile, err := profiles.Take(user, func() (any, error) {
			fresh = true
			loads++
			return names[user], nil
		})
		if err != nil {
			return err
		}
		online.Set(user, tick)
		if err := sessions.SetTimer(user, profile, sessionTicks*time.Second); err != nil {
			return err
		}
		from := "cache"
		if fresh {
			from = "database"
		}
		fmt.Fprintf(w, "tick %d: %s logs in as %v (profile from the %s)\n", tick, user, profile, from)
		return nil
	}
	use := func(user string) error {
		fmt.Fprintf(w, "tick %d: %s makes a request, session extended\n", tick, user)
		return sessions.MoveTimer(user, sessionTicks*time.Second)
	}
	logout := func(user string) error {
		online.Del(user)
		profiles.Del(user)
		fmt.Fprintf(w, "tick %d: %s logs out\n", tick, user)
		return sessions.RemoveTimer(user)
	}
	showOnline := func() {
		var users []string
		online.Range(func(key, val any) bool {
			users = append(users, fmt.Sprintf("%v (since tick %v)", key, val))
			return true
		})
		slices.Sort(users)
		fmt.Fprintf(w, "tick %d: online %d: %s\n", tick, online.Size(), strings.Join(users, ", "))
	}

	for _, err := range []error{login("alice"), login("bob"), login("alice")} {
		if err != nil {
			return err
		}
	}
	showOnline()
	step()
	if err := use("alice"); err != nil {
		return err
	}
	step()
	step()
	if err := awaitExpiries(1); err != nil { // bob: set on tick 0
		return err
	}
	showOnline()
	step()
	if err := awaitExpiries(1); err != nil { // alice: moved on tick 1
		return err
	}
	for _, err := range []error{login("carol"), login("dave"), login("bob"), logout("dave")} {
		if err != nil {
			return err
		}
	}
	profiles.SetWithExpire("carol", "Captain Marvel", 2*time.Hour)
	profiles.Set("bob", "Robert Zimmerman")
	for _, u := range []string{"bob", "carol", "dave"} {
		p, ok := profiles.Get(u)
		fmt.Fprintf(w, "tick %d: cached profile of %s: %v, %v\n", tick, u, p, ok)
	}
	showOnline()

	// Shutdown: close the sessions still open. go-zero's Drain runs fn on
	// other goroutines after it returns, so collect through a channel.
	open := online.Size()
	closed := make(chan string, 16)
	if err := sessions.Drain(func(key, value any) { closed <- key.(string) }); err != nil {
		return err
	}
	var users []string
	for range open {
		users = append(users, <-closed)
	}
	slices.Sort(users)
	fmt.Fprintf(w, "shutdown: closed the sessions of %s; %d profile loads\n", strings.Join(users, ", "), loads)
	return Desk(w)
}
