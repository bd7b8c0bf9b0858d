package compat

import (
	"errors"
	"math"
	"testing"

	"github.com/ttlkit/ttlkit/collection"
)

// TestDiff_NaNKeyAcceptedByGoZero: go-zero's wheel takes a NaN key, but its
// index never finds the key again: a second SetTimer arms a second timer
// and RemoveTimer removes neither, so both fire. Ours refuses the key
// (ErrArgument) and arms nothing.
func TestDiff_NaNKeyAcceptedByGoZero(t *testing.T) {
	nan := math.NaN()
	var errs [2][]error
	run := 0 // bothFires runs go-zero's wheel first, then ours
	gozero, ours := bothFires(t, 4, func(r *rig) {
		errs[run] = append(errs[run], r.set(nan, 1, iv), r.set(nan, 2, iv), r.remove(nan))
		r.advance(2)
		run++
	})
	if len(gozero) != 2 || gozero[0].value == gozero[1].value {
		t.Errorf("go-zero fired %v, want both NaN timers (values 1 and 2) despite RemoveTimer", gozero)
	}
	for _, err := range errs[0] {
		if err != nil {
			t.Errorf("go-zero: got %v for a NaN key, want nil", err)
		}
	}
	if len(ours) != 0 {
		t.Errorf("ours fired %v, want nothing", ours)
	}
	for _, err := range errs[1] {
		if !errors.Is(err, collection.ErrArgument) {
			t.Errorf("ours: got %v for a NaN key, want ErrArgument", err)
		}
	}
}
