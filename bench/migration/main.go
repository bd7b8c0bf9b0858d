// Command migration runs the same small go-zero program twice over: once
// against go-zero v1.10.3's core/collection and once against ttlkit's
// drop-in facade, github.com/ttlkit/ttlkit/collection. The program's source
// (gozero/ and ttlkit/: a session service on a TimingWheel, a Cache and a
// SafeMap, and an operations desk on a Ring, a Queue, a Set and
// RollingWindows) differs only in that import path, and its output is the
// same:
//
//	cd bench
//	go run ./migration -api gozero
//	go run ./migration -api ttlkit
//	diff -r gozero ttlkit   # in bench/migration: one line per file
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	gozero "github.com/ttlkit/ttlkit/bench/migration/gozero"
	ttlkit "github.com/ttlkit/ttlkit/bench/migration/ttlkit"
)

// apps are the two builds of the program, by the -api name that selects
// them.
var apps = map[string]func(io.Writer) error{
	"gozero": gozero.Run,
	"ttlkit": ttlkit.Run,
}

func main() {
	api := flag.String("api", "ttlkit", "which collection package the program runs on: gozero or ttlkit")
	flag.Parse()
	if err := run(*api, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "migration:", err)
		os.Exit(1)
	}
}

func run(api string, w io.Writer) error {
	app, ok := apps[api]
	if !ok {
		return fmt.Errorf("unknown -api %q, want gozero or ttlkit", api)
	}
	return app(w)
}
