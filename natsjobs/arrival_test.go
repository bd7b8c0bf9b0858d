package natsjobs

import (
	"math/rand/v2"
	"testing"
	"time"
)

// simulateArrivals plays a client library that calls the callback one
// message at a time and keeps at most held messages arrived and not yet
// handled (the one in the callback included), with callbacks that
// sometimes block for long (every runner busy). It returns, per message,
// its arrival and the bound observe gave for it.
func simulateArrivals(r *rand.Rand, held, ring, n int) (arrived, bound []time.Time) {
	a := arrivalBound{starts: make([]time.Time, ring)}
	now := time.Unix(1_000_000, 0)
	var queue []time.Time // arrivals not yet handled; queue[0] is next
	sent := 0
	for len(arrived) < n {
		if len(queue) == 0 {
			// Idle: the next message arrives later and is handled at once.
			now = now.Add(time.Duration(1+r.IntN(5)) * time.Second)
			queue = append(queue, now)
			sent++
		}
		start := now
		arrived = append(arrived, queue[0])
		bound = append(bound, a.observe(start))
		// The callback: quick, or blocked until a runner frees.
		d := time.Duration(r.IntN(int(time.Millisecond)))
		if r.IntN(4) == 0 {
			d = time.Duration(1+r.IntN(60)) * time.Second
		}
		now = start.Add(d)
		// Messages arrive during it while there is room (the one in the
		// callback counts until it returns), in time order.
		at := start
		for sent < n && len(queue) < held && r.IntN(8) > 0 {
			at = at.Add(time.Duration(r.Int64N(int64(now.Sub(at)) + 1)))
			queue = append(queue, at)
			sent++
		}
		queue = queue[1:]
	}
	return arrived, bound
}

// TestArrivalBoundNeverAfterArrival: a delivery that waited in the client
// library's buffer behind blocked callbacks is not taken for a fresh one.
// observe's bound is never later than the message's arrival when the
// library holds at most one more than the ring's size (the message in the
// callback is one of them); with two more the check finds a late bound, so
// it can fail.
func TestArrivalBoundNeverAfterArrival(t *testing.T) {
	for _, tc := range []struct {
		name       string
		held, ring int
		wantLate   bool
	}{
		{"HeldOne", 1, 2, false},
		{"HeldPull", 4, 8, false},
		{"HeldTwoPulls", 8, 8, false},
		{"HeldRingPlusOne", 9, 8, false}, // the one in the callback counts
		{"HeldMoreThanRing", 10, 8, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			late := 0
			for seed := range uint64(200) {
				r := rand.New(rand.NewPCG(seed, 7))
				arrived, bound := simulateArrivals(r, tc.held, tc.ring, 500)
				for i := range arrived {
					if bound[i].After(arrived[i]) {
						late++
						if !tc.wantLate {
							t.Fatalf("seed %d, message %d: bound %v after its arrival, want at or before it", seed, i, bound[i].Sub(arrived[i]))
						}
					}
				}
			}
			if tc.wantLate && late == 0 {
				t.Errorf("no bound later than its arrival with %d held and a ring of %d, want some", tc.held, tc.ring)
			}
		})
	}
}
