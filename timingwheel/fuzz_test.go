package timingwheel

import "testing"

// FuzzWheel runs arbitrary sequences of schedule, move, cancel and advance
// (with budgets from 1 up, so visits are cut short and operations land in
// the middle of them) on wheels of 1 to 16 base slots, in the production
// shape or under 1 to 3 small coarse levels whose top wraps, with deadlines
// and jumps from one tick to 2^40, against the reference model; see runOps
// for the encoding. Every timer must fire exactly at its model
// deadline, exactly once, and the invariant checker runs after every step.
//
//	go test -run '^$' -fuzz FuzzWheel -fuzztime 60s ./timingwheel/
func FuzzWheel(f *testing.F) {
	f.Add([]byte{7, 0, 0, 1, 9, 4, 0, 3, 0, 1, 40, 4, 0, 20})
	f.Add([]byte{0, 1, 0, 0, 0, 2, 1, 1, 5, 2, 2, 4, 3, 7, 3, 0, 0})
	f.Add([]byte{3, 3, 0, 1, 2, 0, 2, 2, 0, 3, 2, 4, 0, 1, 5, 1, 4, 1, 0, 30, 4, 2, 9})
	f.Add([]byte{15, 4, 1, 5, 200, 1, 6, 17, 5, 5, 4, 4, 1, 255, 3, 5, 0, 5, 2, 60})
	f.Add([]byte{4, 0, 6, 20, 3, 6, 33, 200, 0, 2, 9, 7, 31, 9, 4, 0, 1, 3, 20, 0})
	f.Add([]byte{2, 2, 6, 3, 5, 0, 1, 7, 7, 2, 1, 3, 3, 0, 5, 4, 12, 6, 0, 1, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		runOps(t, data)
	})
}
