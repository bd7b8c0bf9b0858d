package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// recordFile is written by -raw next to the suites' raw output and read by
// -replay, so that a report rendered again from saved output shows the
// command, machine and times of the run that measured it.
const recordFile = "run.json"

// A runRecord is what a replay needs besides the raw output.
type runRecord struct {
	Command string                   // the tool's command line of the measuring run
	Quick   bool                     // it ran in -quick mode
	Machine machine                  // where and when it ran
	Elapsed map[string]time.Duration // by suite ID
	Args    map[string][]string      // go's arguments, by suite ID
}

func saveRecord(dir string, rep *report) error {
	rec := runRecord{Command: rep.Command, Quick: rep.Quick, Machine: rep.Machine,
		Elapsed: map[string]time.Duration{}, Args: map[string][]string{}}
	for _, r := range rep.Runs {
		rec.Args[r.Suite.ID] = r.Args
		if r.Elapsed > 0 {
			rec.Elapsed[r.Suite.ID] = r.Elapsed
		}
	}
	b, err := json.MarshalIndent(rec, "", "\t")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, recordFile), append(b, '\n'), 0o644)
}

// loadRecord reads the record of a replayed run; ok is false when the
// directory has none (output saved by hand, or by an older tool).
func loadRecord(dir string) (rec runRecord, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if errors.Is(err, os.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, err
	}
	return rec, true, nil
}
