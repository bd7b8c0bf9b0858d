package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
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
desk: last 3 requests: [/profile /whoami /logout]
desk: ran job resize avatar
desk: ran job send welcome mail
desk: ran job rebuild index
desk: more jobs: false
desk: 2 tags [sessions timers], cache: false
desk: 4 requests, mean latency 16.25ms
desk: peak over 3 complete hours: 0 (the current hour is left out)
desk: bucket sum 5 of 2 values
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

// TestOnlyTheImportDiffers: the two copies of the program have the same
// files, each the same but for the collection import path.
func TestOnlyTheImportDiffers(t *testing.T) {
	files := func(dir string) []string {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range paths {
			names = append(names, filepath.Base(p))
		}
		return names
	}
	read := func(dir, name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const (
		theirs = `"github.com/zeromicro/go-zero/core/collection"`
		ours   = `"github.com/ttlkit/ttlkit/collection"`
	)
	names := files("ttlkit")
	if g := files("gozero"); !slices.Equal(g, names) || len(names) == 0 {
		t.Fatalf("gozero/ has %v, ttlkit/ has %v: want the same files", g, names)
	}
	for _, name := range names {
		g, o := read("gozero", name), read("ttlkit", name)
		if strings.Count(g, theirs) != 1 || strings.Count(o, ours) != 1 {
			t.Fatalf("want one import of %s in gozero/%s and one of %s in ttlkit/%s", theirs, name, ours, name)
		}
		if strings.Replace(g, theirs, ours, 1) != o {
			t.Errorf("gozero/%s and ttlkit/%s differ beyond the import path", name, name)
		}
	}
}

func TestRunUnknownAPI(t *testing.T) {
	if err := run("otter", new(bytes.Buffer)); err == nil {
		t.Error(`run("otter"): got nil error, want one`)
	}
}
