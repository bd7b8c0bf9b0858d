package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// want is the program's output, whichever package it runs on.
const want = `tick 0: alice logs in as Alice Liddell (profile from the database)
tick 0: bob logs in as Bob Dylan (profile from the database)
tick 0: alice logs in as Alice Liddell (profile from the cache)
tick 0: online 2: alice (since tick 0), bob (since tick 0)
tick 1: alice makes a request, session extended
tick 3: expired bob
tick 3: online 1: alice (since tick 0)
tick 4: expired alice
tick 4: carol logs in as Carol Danvers (profile from the database)
tick 4: dave logs in as Dave Bowman (profile from the database)
tick 4: bob logs in as Bob Dylan (profile from the cache)
tick 4: dave logs out
tick 4: cached profile of bob: Robert Zimmerman, true
tick 4: cached profile of carol: Captain Marvel, true
tick 4: cached profile of dave: <nil>, false
tick 4: online 2: bob (since tick 4), carol (since tick 4)
shutdown: closed the sessions of bob, carol; 4 profile loads
`

// TestSameOutput runs the program on go-zero and on ttlkit, several times
// each, and requires the same output every time.
func TestSameOutput(t *testing.T) {
	for _, api := range []string{"gozero", "ttlkit"} {
		for i := range 10 {
			var out bytes.Buffer
			if err := run(api, &out); err != nil {
				t.Fatalf("%s, run %d: %v", api, i, err)
			}
			if got := out.String(); got != want {
				t.Fatalf("%s, run %d: got\n%s\nwant\n%s", api, i, got, want)
			}
		}
	}
}

// TestOnlyTheImportDiffers: the two copies of the program are the same
// file but for the collection import path.
func TestOnlyTheImportDiffers(t *testing.T) {
	read := func(dir string) string {
		b, err := os.ReadFile(filepath.Join(dir, "app.go"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const (
		theirs = `"github.com/zeromicro/go-zero/core/collection"`
		ours   = `"github.com/ttlkit/ttlkit/collection"`
	)
	g, o := read("gozero"), read("ttlkit")
	if strings.Count(g, theirs) != 1 || strings.Count(o, ours) != 1 {
		t.Fatalf("want one import of %s in gozero/app.go and one of %s in ttlkit/app.go", theirs, ours)
	}
	if strings.Replace(g, theirs, ours, 1) != o {
		t.Error("gozero/app.go and ttlkit/app.go differ beyond the import path")
	}
}

func TestRunUnknownAPI(t *testing.T) {
	if err := run("otter", new(bytes.Buffer)); err == nil {
		t.Error(`run("otter"): got nil error, want one`)
	}
}
