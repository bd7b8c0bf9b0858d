package console_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/console"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// setup opens an embedded server with queue q holding pending p-1 (with
// an HTML payload and header) and p-2, scheduled s-1, and dead letter d-1,
// and serves a console of it.
func setup(t *testing.T, o console.Options) (*natsjobs.Client, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dead := make(chan natsjobs.DeadLetter, 1)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		done <- c.Work(wctx, "q", func(context.Context, natsjobs.Run) error {
			return jobs.Permanent(errors.New("<b>declined</b>"))
		}, natsjobs.WorkOptions{DeadLetter: func(d natsjobs.DeadLetter) { dead <- d }})
	}()
	if err := c.Enqueue(ctx, natsjobs.Job{Queue: "q", ID: "d-1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dead:
	case <-time.After(30 * time.Second):
		t.Fatal("no dead letter")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	for _, j := range []natsjobs.Job{
		{Queue: "q", ID: "p-1", Payload: []byte(`<script>alert("x")</script>`), Header: map[string]string{"Note": `<img src=x onerror=alert(1)>`}},
		{Queue: "q", ID: "p-2"},
	} {
		if err := c.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.EnqueueAfter(ctx, natsjobs.Job{Queue: "q", ID: "s-1"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Counted at once: the enqueues returned, Work returned (its outcome
	// was confirmed), and Pending counts the stream.
	st, err := c.QueueStats(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 2 || st.Scheduled != 1 || st.Running != 0 || st.Dead != 1 {
		t.Fatalf("QueueStats = %+v, want 2 pending, 1 scheduled, 1 dead", st)
	}
	con, err := console.New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)
	return c, srv
}

type browser struct {
	t    *testing.T
	http *http.Client
	base string
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t, &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, base}
}

func (b *browser) get(query string, status int) string {
	b.t.Helper()
	resp, err := b.http.Get(b.base + "/?" + query)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		b.t.Fatalf("GET ?%s: status %d, want %d\n%s", query, resp.StatusCode, status, body)
	}
	return string(body)
}

var tokenRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// token returns the cross-site token of a page that was loaded.
func (b *browser) token() string {
	b.t.Helper()
	m := tokenRE.FindStringSubmatch(b.get("", 200))
	if m == nil {
		b.t.Fatal("no csrf token on the queues page")
	}
	return m[1]
}

func (b *browser) post(form url.Values, hdr map[string]string) (int, string, string) {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.base+"/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

func allowAll(*http.Request, console.Action) bool { return true }

// paused reports whether queue q is paused.
func paused(t *testing.T, c *natsjobs.Client) bool {
	t.Helper()
	st, err := c.QueueStats(context.Background(), "q")
	if err != nil {
		t.Fatalf("QueueStats: %v", err)
	}
	return st.Paused
}

func TestReadOnlyByDefault(t *testing.T) {
	c, srv := setup(t, console.Options{})
	b := newBrowser(t, srv.URL)
	page := b.get("", 200)
	for _, want := range []string{`id="queue-q"`, `badge paused`, `?q=q&amp;state=dead">1</a>`, `?q=q&amp;state=pending">2</a>`, `<meta http-equiv="refresh" content="5">`} {
		if !strings.Contains(page, want) {
			t.Errorf("queues page lacks %q", want)
		}
	}
	for _, query := range []string{"", "q=q", "q=q&state=dead", "q=q&job=p-1", "q=q&job=d-1"} {
		if p := b.get(query, 200); strings.Contains(p, "<button type=\"submit\" name=\"") {
			t.Errorf("read-only page ?%s shows an action button", query)
		}
	}
	if strings.Contains(b.get("", 200), `name="csrf"`) {
		t.Error("a read-only page carries a form")
	}
	status, _, _ := b.post(url.Values{"do": {"resume"}, "q": {"q"}}, nil)
	if status != http.StatusForbidden {
		t.Errorf("POST resume on a read-only console: status %d, want 403", status)
	}
	if !paused(t, c) {
		t.Error("a read-only console resumed the queue")
	}
}

func TestCrossSiteRequestsRefused(t *testing.T) {
	c, srv := setup(t, console.Options{Authorize: allowAll})
	b := newBrowser(t, srv.URL)
	tok := b.token()
	// wrong differs from tok in its first character whatever that is
	// ("x"+tok[1:] was tok itself for a token starting with x).
	wrong := "x" + tok[1:]
	if tok[0] == 'x' {
		wrong = "y" + tok[1:]
	}
	resume := url.Values{"do": {"resume"}, "q": {"q"}}
	with := func(tok string) url.Values {
		v := url.Values{"csrf": {tok}}
		for k, vs := range resume {
			v[k] = vs
		}
		return v
	}
	for _, tc := range []struct {
		name string
		form url.Values
		hdr  map[string]string
		b    *browser
	}{
		{"NoToken", resume, nil, b},
		{"WrongToken", with(wrong), nil, b},
		{"OtherBrowsersToken", with(tok), nil, newBrowser(t, srv.URL)},
		{"CrossSiteFetch", with(tok), map[string]string{"Sec-Fetch-Site": "cross-site"}, b},
		{"CrossOrigin", with(tok), map[string]string{"Origin": "https://evil.example"}, b},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, _, _ := tc.b.post(tc.form, tc.hdr); status != http.StatusForbidden {
				t.Errorf("status %d, want 403", status)
			}
			if !paused(t, c) {
				t.Fatal("the refused request resumed the queue")
			}
		})
	}
	status, loc, _ := b.post(with(tok), map[string]string{"Sec-Fetch-Site": "same-origin"})
	if status != http.StatusSeeOther || loc != "?done=q+resumed" {
		t.Errorf("POST resume: %d to %q, want 303 to ?done=q+resumed", status, loc)
	}
	if paused(t, c) {
		t.Error("the queue is still paused")
	}
	if resp, err := http.Get(srv.URL + "/?q=q"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET without cookie: %d", resp.StatusCode)
		}
	}
}

func TestPayloadsEscaped(t *testing.T) {
	_, srv := setup(t, console.Options{Authorize: allowAll})
	b := newBrowser(t, srv.URL)
	page := b.get("q=q&job=p-1", 200)
	for _, bad := range []string{"<script>", "<img", "<b>declined"} {
		if strings.Contains(page, bad) {
			t.Errorf("job page contains raw %q", bad)
		}
	}
	for _, want := range []string{`&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`, `&lt;img src=x onerror=alert(1)&gt;`} {
		if !strings.Contains(page, want) {
			t.Errorf("job page lacks the escaped %q", want)
		}
	}
	if page := b.get("q=q&state=dead", 200); !strings.Contains(page, "&lt;b&gt;declined&lt;/b&gt;") || strings.Contains(page, "<b>declined") {
		t.Error("dead letters page: the error is not escaped")
	}
}

// Authorize sees each action, is asked before a button is shown, and
// decides each POST.
func TestAuthorizeDecidesEachAction(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	authorize := func(r *http.Request, a console.Action) bool {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%v %s %q %q %v", a.Kind, a.Queue, a.IDs, a.Prefix, a.All))
		mu.Unlock()
		return a.Kind == console.Redrive || a.Kind == console.Cancel && len(a.IDs) == 1 && a.IDs[0] == "p-2"
	}
	c, srv := setup(t, console.Options{Authorize: authorize})
	b := newBrowser(t, srv.URL)
	page := b.get("q=q&state=dead", 200)
	if !strings.Contains(page, `name="redrive"`) || strings.Contains(page, `name="delete"`) {
		t.Error("dead letters page: want Redrive buttons and no Delete")
	}
	if page := b.get("q=q&job=p-1", 200); strings.Contains(page, `name="cancel"`) {
		t.Error("p-1 page shows Cancel, which Authorize refuses for p-1")
	}
	if page := b.get("q=q&job=p-2", 200); !strings.Contains(page, `name="cancel"`) {
		t.Error("p-2 page lacks Cancel, which Authorize allows")
	}
	tok := tokenRE.FindStringSubmatch(page)[1]
	if status, _, _ := b.post(url.Values{"csrf": {tok}, "do": {"cancel"}, "q": {"q"}, "id": {"p-1"}}, nil); status != http.StatusForbidden {
		t.Errorf("cancel p-1: status %d, want 403", status)
	}
	status, loc, _ := b.post(url.Values{"csrf": {tok}, "do": {"cancel"}, "q": {"q"}, "id": {"p-2"}, "back": {"q=q&state=pending&evil=1"}}, nil)
	if status != http.StatusSeeOther || loc != "?done=1+job+cancelled&q=q&state=pending" {
		t.Errorf("cancel p-2: %d to %q, want 303 to the pending list", status, loc)
	}
	if _, err := c.Get(context.Background(), "q", "p-2"); !errors.Is(err, natsjobs.ErrNotFound) {
		t.Errorf("p-2 after cancel: %v, want ErrNotFound", err)
	}
	status, _, _ = b.post(url.Values{"csrf": {tok}, "do": {"redrive"}, "q": {"q"}, "all": {"1"}}, nil)
	if status != http.StatusSeeOther {
		t.Errorf("redrive all: status %d, want 303", status)
	}
	if info, err := c.Get(context.Background(), "q", "d-1"); err != nil || info.State != natsjobs.Pending {
		t.Errorf("d-1 after redrive: %v, %v; want pending", info.State, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{`cancel q ["p-1"] "" false`, `cancel q ["p-2"] "" false`, `redrive q [] "" true`} {
		found := false
		for _, s := range seen {
			found = found || s == want
		}
		if !found {
			t.Errorf("Authorize never saw %s; saw %q", want, seen)
		}
	}
}

func TestPages(t *testing.T) {
	_, srv := setup(t, console.Options{Authorize: allowAll, Refresh: -1})
	b := newBrowser(t, srv.URL)
	for _, tc := range []struct {
		query  string
		status int
		want   []string
		not    []string
	}{
		{"", 200, []string{"Queues", `name="resume"`}, []string{"http-equiv"}},
		{"q=q", 200, []string{`id="job-p-1"`, `id="job-p-2"`, `class="active">pending`}, []string{`id="job-s-1"`}},
		{"q=q&state=scheduled", 200, []string{`id="job-s-1"`, " UTC, in "}, nil},
		{"q=q&state=pending&prefix=p-2", 200, []string{`id="job-p-2"`}, []string{`id="job-p-1"`}},
		{"q=q&state=dead", 200, []string{`id="job-d-1"`, `name="redrive-all"`, `name="delete-all"`}, nil},
		{"q=q&state=running", 200, []string{"No running jobs"}, nil},
		{"q=q&job=d-1", 200, []string{"Last error", `name="redrive"`}, []string{`name="cancel"`}},
		{"q=q&job=nope", 404, []string{"no job nope in queue q"}, nil},
		{"q=q&state=bogus", 400, []string{`state &#34;bogus&#34;`}, nil},
		{"q=q&after=x", 400, []string{`after &#34;x&#34;`}, nil},
		{"q=nosuch", 400, []string{"unknown queue &#34;nosuch&#34;"}, nil},
	} {
		page := b.get(tc.query, tc.status)
		for _, w := range tc.want {
			if !strings.Contains(page, w) {
				t.Errorf("?%s lacks %q", tc.query, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(page, w) {
				t.Errorf("?%s contains %q", tc.query, w)
			}
		}
	}
	resp, err := http.Get(srv.URL + "/?q=q")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q, want default-src 'none'", csp)
	}
	req, _ := http.NewRequest("DELETE", srv.URL, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %v %v, want 405", resp.StatusCode, err)
	}
}

func TestOnlyListedQueues(t *testing.T) {
	_, srv := setup(t, console.Options{Queues: []string{"other"}})
	b := newBrowser(t, srv.URL)
	if page := b.get("q=q", 404); !strings.Contains(page, "not shown here") {
		t.Error("a queue outside Options.Queues was shown")
	}
	if _, err := console.New(nil, console.Options{}); !errors.Is(err, natsjobs.ErrInvalid) {
		t.Errorf("New(nil): %v, want ErrInvalid", err)
	}
}
