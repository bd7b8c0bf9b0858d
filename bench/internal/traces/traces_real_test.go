package traces

import (
	"errors"
	"slices"
	"testing"
)

// TestRealTraces checks every trace of the shared folder against the
// accesses and distinct keys its README lists, and that Load's limit takes
// a prefix. It skips when the folder is absent (a clone has none), and under
// -short or the race detector (decoding the 5 MB of traces then takes a
// minute and exercises no concurrency).
func TestRealTraces(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("decodes every real trace: not under -short or -race")
	}
	dir, err := Dir("../..")
	if errors.Is(err, ErrNoTraces) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{
		"oltp":   {914_145, 186_880},
		"scarab": {1_245_184, 258_368},
		"web12":  {95_607, 13_756},
		"loop":   {505_500, 1_011},
		"sprite": {133_996, 7_075},
	}
	for _, tr := range All {
		t.Run(tr.Name, func(t *testing.T) {
			keys, err := Load(dir, tr, 0)
			if err != nil {
				t.Fatal(err)
			}
			w := want[tr.Name]
			if len(keys) != w[0] {
				t.Errorf("%d accesses, want %d", len(keys), w[0])
			}
			if d := Distinct(keys); d != w[1] {
				t.Errorf("%d distinct keys, want %d", d, w[1])
			}
			first, err := Load(dir, tr, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(first, keys[:1000]) {
				t.Errorf("Load with max 1000 is not the first 1000 accesses")
			}
		})
	}
}
