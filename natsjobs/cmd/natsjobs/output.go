package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/ttlkit/ttlkit/natsjobs"
)

// out prints results as aligned tables or, with --json, as JSON.
type out struct {
	w    io.Writer
	json bool
	now  time.Time // for relative times; time.Now() when zero
}

func (o *out) encode(v any) error {
	enc := json.NewEncoder(o.w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (o *out) table(header string, rows [][]string) error {
	tw := tabwriter.NewWriter(o.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// jsonQueue is a queue's line in JSON.
type jsonQueue struct {
	Queue         string     `json:"queue"`
	Paused        bool       `json:"paused"`
	Scheduled     int        `json:"scheduled"`
	Pending       int        `json:"pending"`
	Running       int        `json:"running"`
	Retrying      int        `json:"retrying"`
	Dead          int        `json:"dead"`
	OldestPending *time.Time `json:"oldest_pending,omitempty"`
	Rates         *jsonRates `json:"rates_per_second,omitempty"`
}

type jsonRates struct {
	Stored  float64 `json:"stored"`
	Started float64 `json:"started"`
	Dead    float64 `json:"dead"`
}

func queueJSON(st natsjobs.QueueStats) jsonQueue {
	q := jsonQueue{Queue: st.Queue, Paused: st.Paused, Scheduled: st.Scheduled, Pending: st.Pending, Running: st.Running, Retrying: st.Retrying, Dead: st.Dead}
	if !st.OldestPending.IsZero() {
		t := st.OldestPending.UTC()
		q.OldestPending = &t
	}
	return q
}

func (o *out) queues(stats []natsjobs.QueueStats) error {
	if o.json {
		list := make([]jsonQueue, len(stats))
		for i, st := range stats {
			list[i] = queueJSON(st)
		}
		return o.encode(list)
	}
	rows := make([][]string, len(stats))
	for i, st := range stats {
		rows[i] = []string{st.Queue, state(st.Paused), itoa(st.Scheduled), itoa(st.Pending), itoa(st.Running), itoa(st.Dead), o.ago(st.OldestPending)}
	}
	return o.table("QUEUE\tSTATE\tSCHEDULED\tPENDING\tRUNNING\tDEAD\tOLDEST PENDING", rows)
}

func (o *out) stats(now, prev []natsjobs.QueueStats) error {
	if o.json {
		list := make([]jsonQueue, len(now))
		for i, st := range now {
			list[i] = queueJSON(st)
			if prev != nil {
				r := st.Rates(prev[i])
				list[i].Rates = &jsonRates{Stored: r.Stored, Started: r.Started, Dead: r.Buried}
			}
		}
		return o.encode(list)
	}
	rows := make([][]string, len(now))
	for i, st := range now {
		rows[i] = []string{st.Queue, state(st.Paused), itoa(st.Scheduled), itoa(st.Pending), itoa(st.Running), itoa(st.Retrying), itoa(st.Dead), o.ago(st.OldestPending), "-", "-", "-"}
		if prev != nil {
			r := st.Rates(prev[i])
			rows[i][8], rows[i][9], rows[i][10] = rate(r.Stored), rate(r.Started), rate(r.Buried)
		}
	}
	return o.table("QUEUE\tSTATE\tSCHEDULED\tPENDING\tRUNNING\tRETRYING\tDEAD\tOLDEST PENDING\tSTORED/S\tSTARTED/S\tDEAD/S", rows)
}

// jsonJob is a job in JSON: the payload as text when it is UTF-8, in
// base64 otherwise.
type jsonJob struct {
	Queue         string            `json:"queue"`
	ID            string            `json:"id"`
	State         natsjobs.State    `json:"state"`
	Attempts      int               `json:"attempts"`
	LastError     string            `json:"last_error,omitempty"`
	NextRun       *time.Time        `json:"next_run,omitempty"`
	Cron          string            `json:"cron,omitempty"`
	Stored        time.Time         `json:"stored"`
	Failed        *time.Time        `json:"failed,omitempty"`
	Header        map[string]string `json:"header,omitempty"`
	Payload       *string           `json:"payload,omitempty"`
	PayloadBase64 []byte            `json:"payload_base64,omitempty"`
	Seq           uint64            `json:"seq"`
}

func jobJSON(j natsjobs.JobInfo) jsonJob {
	v := jsonJob{Queue: j.Queue, ID: j.ID, State: j.State, Attempts: j.Attempts, LastError: j.LastError, Cron: j.Cron, Stored: j.Stored.UTC(), Header: j.Header, Seq: j.Seq}
	if !j.NextRun.IsZero() {
		t := j.NextRun.UTC()
		v.NextRun = &t
	}
	if !j.Failed.IsZero() {
		t := j.Failed.UTC()
		v.Failed = &t
	}
	if utf8.Valid(j.Payload) {
		s := string(j.Payload)
		v.Payload = &s
	} else {
		v.PayloadBase64 = j.Payload
	}
	return v
}

func (o *out) page(p natsjobs.Page) error {
	if o.json {
		v := struct {
			Jobs []jsonJob `json:"jobs"`
			Next uint64    `json:"next,omitempty"`
		}{Jobs: make([]jsonJob, len(p.Jobs)), Next: p.Next}
		for i, j := range p.Jobs {
			v.Jobs[i] = jobJSON(j)
		}
		return o.encode(v)
	}
	rows := make([][]string, len(p.Jobs))
	for i, j := range p.Jobs {
		when := o.when(j.NextRun)
		if j.State == natsjobs.Dead {
			when = o.when(j.Failed)
		}
		rows[i] = []string{printable(j.ID), j.State.String(), itoa(j.Attempts), when, printable(clip(j.LastError, 60))}
	}
	if err := o.table("ID\tSTATE\tATTEMPTS\tNEXT RUN / FAILED\tLAST ERROR", rows); err != nil {
		return err
	}
	if p.Next != 0 {
		_, err := fmt.Fprintf(o.w, "more: --after %d\n", p.Next)
		return err
	}
	return nil
}

func (o *out) job(j natsjobs.JobInfo) error {
	if o.json {
		return o.encode(jobJSON(j))
	}
	rows := [][]string{
		{"queue", j.Queue},
		{"id", printable(j.ID)},
		{"state", j.State.String()},
		{"attempts", itoa(j.Attempts)},
	}
	if j.LastError != "" {
		rows = append(rows, []string{"last error", printable(j.LastError)})
	}
	if !j.NextRun.IsZero() {
		rows = append(rows, []string{"next run", o.when(j.NextRun)})
	}
	if j.Cron != "" {
		rows = append(rows, []string{"cron", printable(j.Cron)})
	}
	if !j.Failed.IsZero() {
		rows = append(rows, []string{"failed", o.when(j.Failed)})
	}
	rows = append(rows, []string{"stored", o.when(j.Stored)})
	keys := make([]string, 0, len(j.Header))
	for k := range j.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		rows = append(rows, []string{"header " + printable(k), printable(j.Header[k])})
	}
	rows = append(rows, []string{"payload", fmt.Sprintf("%d bytes", len(j.Payload))})
	tw := tabwriter.NewWriter(o.w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(j.Payload) > 0 {
		_, err := fmt.Fprintln(o.w, printablePayload(j.Payload))
		return err
	}
	return nil
}

// done reports how many of the asked jobs an action took; fewer than
// asked is ErrNotFound (exit code 4).
func (o *out) done(n, asked int, verb string, missing []string) error {
	if o.json {
		if err := o.encode(struct {
			Count   int      `json:"count"`
			Missing []string `json:"missing,omitempty"`
		}{n, missing}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(o.w, "%d %s\n", n, verb)
		for _, id := range missing {
			fmt.Fprintf(o.w, "not found: %s\n", printable(id))
		}
	}
	if n < asked {
		return notAll(n, asked, verb)
	}
	return nil
}

func (o *out) message(s string) error {
	if o.json {
		return o.encode(struct {
			OK      bool   `json:"ok"`
			Message string `json:"message"`
		}{true, s})
	}
	_, err := fmt.Fprintln(o.w, s)
	return err
}

func (o *out) clock() time.Time {
	if o.now.IsZero() {
		return time.Now()
	}
	return o.now
}

// when prints a time with how far it is from now: "2026-11-27 20:15:00 UTC (in 59m)".
func (o *out) when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(o.clock())
	rel := "in " + short(d)
	if d < 0 {
		rel = short(-d) + " ago"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC") + " (" + rel + ")"
}

// ago prints how long ago t was, or "-".
func (o *out) ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return short(max(o.clock().Sub(t), 0))
}

// short rounds d for people: 850ms, 12s, 4m10s, 3h5m, 2d4h.
func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return strings.TrimSuffix(d.Round(time.Second).String(), "0s")
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	days := int(d / (24 * time.Hour))
	return strconv.Itoa(days) + "d" + strconv.Itoa(int(d%(24*time.Hour)/time.Hour)) + "h"
}

func state(paused bool) string {
	if paused {
		return "paused"
	}
	return "active"
}

func itoa(n int) string { return strconv.Itoa(n) }

func rate(r float64) string { return strconv.FormatFloat(r, 'f', 1, 64) }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// printable quotes s if it holds anything a terminal would interpret.
func printable(s string) string {
	for _, r := range s {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return strconv.Quote(s)
		}
	}
	return s
}

// printablePayload returns a payload as text if it is printable UTF-8
// (newlines and tabs allowed), quoted otherwise.
func printablePayload(p []byte) string {
	s := string(p)
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if (r < ' ' && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return strconv.Quote(s)
		}
	}
	return s
}
