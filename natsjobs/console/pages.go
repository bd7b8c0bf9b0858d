package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ttlkit/ttlkit/natsjobs"
)

// page is what every template gets.
type page struct {
	Title   string
	Refresh int // seconds; 0: no reload
	Token   string
	Flash   string // the outcome of the last action
	Failed  string // its error
	Queue   string // the queue in the header's path, if any
	Body    any
}

type queueRow struct {
	natsjobs.QueueStats
	Rates     natsjobs.Rates
	HasRates  bool
	Oldest    string
	CanPause  bool
	CanResume bool
}

type tab struct {
	Name   string
	Count  int
	Link   string
	Active bool
}

type jobRow struct {
	ID, State, When, LastError, Link string
	Attempts                         int
	Dead                             bool
}

type listView struct {
	Queue      string
	Stats      natsjobs.QueueStats
	State      string
	Tabs       []tab
	Prefix     string
	Jobs       []jobRow
	NextLink   string
	FirstLink  string // empty on the first page
	Back       string // this page's query, for the actions' redirect
	CanPause   bool
	CanResume  bool
	CanCancel  bool
	CanRedrive bool
	CanDelete  bool
}

type header struct{ Key, Value string }

type jobView struct {
	Info       natsjobs.JobInfo
	State      string
	NextRun    string
	Stored     string
	Failed     string
	Headers    []header
	Payload    string
	Binary     bool
	Back       string
	ListLink   string
	CanCancel  bool
	CanRedrive bool
	CanDelete  bool
}

type errorView struct {
	Status  int
	Message string
}

func (h *Console) get(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := page{Title: h.opts.Title, Token: h.token(w, r), Flash: q.Get("done"), Failed: q.Get("failed"), Queue: q.Get("q")}
	if h.opts.Refresh > 0 {
		p.Refresh = max(int(h.opts.Refresh.Round(time.Second)/time.Second), 1)
	}
	ctx := r.Context()
	var err error
	name := "queues"
	switch {
	case p.Queue == "":
		p.Body, err = h.queuesView(ctx, r)
	case !h.queueAllowed(p.Queue):
		err = fmt.Errorf("%w: queue %s is not shown here", natsjobs.ErrNotFound, p.Queue)
	case q.Has("job"):
		name = "job"
		p.Body, err = h.jobView(ctx, r, p.Queue, q.Get("job"))
	default:
		name = "list"
		p.Body, err = h.listView(ctx, r, p.Queue, q)
	}
	status := http.StatusOK
	if err != nil {
		status = errorStatus(err)
		name, p.Body = "error", errorView{status, strings.TrimPrefix(err.Error(), "natsjobs: ")}
	}
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, p); err != nil {
		http.Error(w, "console: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func errorStatus(err error) int {
	switch {
	case errors.Is(err, natsjobs.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, natsjobs.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, natsjobs.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

func (h *Console) queuesView(ctx context.Context, r *http.Request) ([]queueRow, error) {
	names := h.opts.Queues
	if len(names) == 0 {
		var err error
		if names, err = h.c.Queues(ctx); err != nil {
			return nil, err
		}
	}
	rows := make([]queueRow, 0, len(names))
	for _, q := range names {
		st, err := h.c.QueueStats(ctx, q)
		if err != nil {
			return nil, err
		}
		row := queueRow{QueueStats: st, Oldest: ago(st.OldestPending, st.At)}
		row.Rates, row.HasRates = h.rates(st)
		row.CanPause = !st.Paused && h.allowed(r, Action{Kind: Pause, Queue: q})
		row.CanResume = st.Paused && h.allowed(r, Action{Kind: Resume, Queue: q})
		rows = append(rows, row)
	}
	return rows, nil
}

func link(v url.Values) string { return "?" + v.Encode() }

func (h *Console) listView(ctx context.Context, r *http.Request, queue string, q url.Values) (listView, error) {
	stateName := q.Get("state")
	if stateName == "" {
		stateName = "pending"
	}
	state, err := natsjobs.ParseState(stateName)
	if err != nil {
		return listView{}, err
	}
	var after uint64
	if s := q.Get("after"); s != "" {
		if after, err = strconv.ParseUint(s, 10, 64); err != nil {
			return listView{}, fmt.Errorf("%w: after %q", natsjobs.ErrInvalid, s)
		}
	}
	st, err := h.c.QueueStats(ctx, queue)
	if err != nil {
		return listView{}, err
	}
	prefix := q.Get("prefix")
	pg, err := h.c.List(ctx, queue, natsjobs.ListOptions{State: state, Prefix: prefix, After: after, Limit: 50})
	if err != nil {
		return listView{}, err
	}
	v := listView{Queue: queue, Stats: st, State: stateName, Prefix: prefix}
	for _, s := range []natsjobs.State{natsjobs.Pending, natsjobs.Scheduled, natsjobs.Running, natsjobs.Dead} {
		n := map[natsjobs.State]int{natsjobs.Pending: st.Pending, natsjobs.Scheduled: st.Scheduled, natsjobs.Running: st.Running, natsjobs.Dead: st.Dead}[s]
		v.Tabs = append(v.Tabs, tab{Name: s.String(), Count: n, Link: link(url.Values{"q": {queue}, "state": {s.String()}}), Active: s == state})
	}
	self := url.Values{"q": {queue}, "state": {stateName}}
	if prefix != "" {
		self.Set("prefix", prefix)
	}
	if after != 0 {
		v.FirstLink = link(self)
		self.Set("after", strconv.FormatUint(after, 10))
	}
	v.Back = self.Encode()
	if pg.Next != 0 {
		next := url.Values{"q": {queue}, "state": {stateName}, "after": {strconv.FormatUint(pg.Next, 10)}}
		if prefix != "" {
			next.Set("prefix", prefix)
		}
		v.NextLink = link(next)
	}
	for _, j := range pg.Jobs {
		row := jobRow{ID: j.ID, State: j.State.String(), Attempts: j.Attempts, LastError: clip(j.LastError, 120), Dead: j.State == natsjobs.Dead,
			Link: link(url.Values{"q": {queue}, "job": {j.ID}})}
		if row.Dead {
			row.When = when(j.Failed, st.At)
		} else {
			row.When = when(j.NextRun, st.At)
		}
		v.Jobs = append(v.Jobs, row)
	}
	v.CanPause = !st.Paused && h.allowed(r, Action{Kind: Pause, Queue: queue})
	v.CanResume = st.Paused && h.allowed(r, Action{Kind: Resume, Queue: queue})
	if state == natsjobs.Dead {
		v.CanRedrive = h.allowed(r, Action{Kind: Redrive, Queue: queue, All: true})
		v.CanDelete = h.allowed(r, Action{Kind: DeleteDead, Queue: queue, All: true})
	} else {
		v.CanCancel = h.allowed(r, Action{Kind: Cancel, Queue: queue})
	}
	return v, nil
}

func (h *Console) jobView(ctx context.Context, r *http.Request, queue, id string) (jobView, error) {
	j, err := h.c.Get(ctx, queue, id)
	if err != nil {
		return jobView{}, err
	}
	now := time.Now()
	v := jobView{Info: j, State: j.State.String(), NextRun: when(j.NextRun, now), Stored: when(j.Stored, now), Failed: when(j.Failed, now)}
	for k, val := range j.Header {
		v.Headers = append(v.Headers, header{k, val})
	}
	slices.SortFunc(v.Headers, func(a, b header) int { return strings.Compare(a.Key, b.Key) })
	switch {
	case !utf8.Valid(j.Payload):
		v.Payload, v.Binary = hex.Dump(j.Payload), true
	case json.Valid(j.Payload):
		var b bytes.Buffer
		json.Indent(&b, j.Payload, "", "  ")
		v.Payload = b.String()
	default:
		v.Payload = string(j.Payload)
	}
	list := url.Values{"q": {queue}, "state": {j.State.String()}}
	v.ListLink, v.Back = link(list), list.Encode()
	one := []string{id}
	if j.State == natsjobs.Dead {
		v.CanRedrive = h.allowed(r, Action{Kind: Redrive, Queue: queue, IDs: one})
		v.CanDelete = h.allowed(r, Action{Kind: DeleteDead, Queue: queue, IDs: one})
	} else {
		v.CanCancel = h.allowed(r, Action{Kind: Cancel, Queue: queue, IDs: one})
	}
	return v, nil
}

// post performs an action and redirects (303) to the page it came from,
// with its outcome.
func (h *Console) post(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if err := h.checkToken(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	f := r.PostForm
	a := Action{Kind: parseKind(f.Get("do")), Queue: f.Get("q"), IDs: f["id"], Prefix: f.Get("prefix"), All: f.Get("all") == "1"}
	if err := a.validate(); err != nil || !h.queueAllowed(a.Queue) {
		http.Error(w, "bad action", http.StatusBadRequest)
		return
	}
	if !h.allowed(r, a) {
		http.Error(w, "not allowed: "+a.Kind.String(), http.StatusForbidden)
		return
	}
	done, err := h.perform(r.Context(), a)
	back, _ := url.ParseQuery(f.Get("back"))
	target := url.Values{}
	for _, k := range []string{"q", "state", "prefix", "after", "job"} {
		if v := back.Get(k); v != "" {
			target.Set(k, v)
		}
	}
	if err != nil {
		target.Set("failed", strings.TrimPrefix(err.Error(), "natsjobs: "))
	} else {
		target.Set("done", done)
	}
	// A relative Location, resolved by the browser against the page's own
	// URL: http.Redirect would resolve it against r.URL.Path, which under
	// http.StripPrefix is not the path the browser asked for.
	w.Header().Set("Location", link(target))
	w.WriteHeader(http.StatusSeeOther)
}

func (a *Action) validate() error {
	if a.Queue == "" {
		return errors.New("no queue")
	}
	sel := 0
	for _, b := range []bool{len(a.IDs) > 0, a.Prefix != "", a.All} {
		if b {
			sel++
		}
	}
	switch a.Kind {
	case Pause, Resume:
		if sel != 0 {
			return errors.New("pause and resume take a queue only")
		}
	case Cancel:
		if len(a.IDs) == 0 || sel != 1 {
			return errors.New("cancel takes IDs")
		}
	case Redrive, DeleteDead:
		if sel != 1 {
			return errors.New("give IDs, a prefix or all")
		}
	default:
		return errors.New("unknown action")
	}
	return nil
}

func (h *Console) perform(ctx context.Context, a Action) (string, error) {
	sel := natsjobs.Select{IDs: a.IDs, Prefix: a.Prefix, All: a.All}
	switch a.Kind {
	case Pause:
		return a.Queue + " paused", h.c.Pause(ctx, a.Queue)
	case Resume:
		return a.Queue + " resumed", h.c.Resume(ctx, a.Queue)
	case Cancel:
		n := 0
		for _, id := range a.IDs {
			ok, err := h.c.Cancel(ctx, a.Queue, id)
			if err != nil {
				return "", err
			}
			if ok {
				n++
			}
		}
		return plural(n, "job") + " cancelled", nil
	case Redrive:
		n, err := h.c.RedriveDead(ctx, a.Queue, sel)
		return plural(n, "dead letter") + " redriven", err
	default:
		n, err := h.c.DeleteDead(ctx, a.Queue, sel)
		return plural(n, "dead letter") + " deleted", err
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// when shows t with how far it is from now: "20:15:00 UTC, in 59m".
func when(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now)
	rel := "in " + short(d)
	if d < 0 {
		rel = short(-d) + " ago"
	}
	layout := "15:04:05 UTC"
	if t.UTC().YearDay() != now.UTC().YearDay() || t.Year() != now.Year() {
		layout = "2006-01-02 15:04 UTC"
	}
	return t.UTC().Format(layout) + ", " + rel
}

func ago(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	return short(max(now.Sub(t), 0))
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
	return strconv.Itoa(int(d/(24*time.Hour))) + "d" + strconv.Itoa(int(d%(24*time.Hour)/time.Hour)) + "h"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// formatRate shows a rate per second with one decimal, or "0".
func formatRate(r float64) string {
	if r == 0 {
		return "0"
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}
