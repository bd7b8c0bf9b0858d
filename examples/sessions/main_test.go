package main

import (
	"cmp"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// want is the demo's narration with exact time.
const want = `sessions live 300ms without a request; every request refreshes its own
    0ms  alice  POST /login   200  token issued
    0ms  bob    POST /login   200  token issued
    0ms  alice  GET  /whoami  200  alice  (and again every 50ms)
  100ms  bob    GET  /whoami  200  bob  (his last request)
  350ms  alice  GET  /whoami  200  alice  (past the TTL since her login: refreshed)
  700ms  bob    GET  /whoami  401  no session: log in again  (two TTLs after his last request)
  700ms  alice  GET  /whoami  200  alice  (after 15 requests, still logged in)
  700ms  server holds 1 session: bob's was reclaimed by the wheel
`

// TestDemoExact runs the demo over an in-memory listener inside a synctest
// bubble, where time moves only when every goroutine waits: the narration,
// stamps included, is exact.
func TestDemoExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := newPipeListener()
		client := &http.Client{Transport: &http.Transport{DialContext: ln.DialContext}}
		var out strings.Builder
		if err := run(&out, ln, client); err != nil {
			t.Fatalf("run: %v", err)
		}
		if got := out.String(); got != want {
			t.Errorf("output:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestDemoLoopback runs the demo as go run does, over TCP on 127.0.0.1 with
// the real clock, and checks the story: the same events with the same
// outcomes in the same order, and none earlier than in the exact run. How
// much later is not asserted; the demo's margins (a request every 50ms
// against a 300ms TTL, bob checked 600ms after his last request) leave
// room for a loaded machine.
func TestDemoLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(&out, ln, &http.Client{Timeout: 10 * time.Second}); err != nil {
		t.Fatalf("run: %v", err)
	}
	gotLines, gotStamps := splitStamps(out.String())
	wantLines, wantStamps := splitStamps(want)
	if strings.Join(gotLines, "\n") != strings.Join(wantLines, "\n") {
		t.Fatalf("output:\n%s\nwant, stamps aside:\n%s", out.String(), want)
	}
	for i := range gotStamps {
		if gotStamps[i] < wantStamps[i] {
			t.Errorf("line %d at %dms, want not before %dms: %s", i+1, gotStamps[i], wantStamps[i], gotLines[i])
		}
	}
	if _, err := ln.Accept(); err == nil {
		t.Errorf("listener still accepts after run returned")
	}
}

// stampRE matches a line's stamp.
var stampRE = regexp.MustCompile(`^ *(\d+)ms  `)

// splitStamps returns out's lines without their stamps, and the stamps in
// milliseconds (-1 for a line without one).
func splitStamps(out string) (lines []string, stamps []int) {
	for _, l := range strings.Split(out, "\n") {
		m := stampRE.FindStringSubmatch(l)
		if m == nil {
			lines, stamps = append(lines, l), append(stamps, -1)
			continue
		}
		ms, _ := strconv.Atoi(m[1])
		lines, stamps = append(lines, l[len(m[0]):]), append(stamps, ms)
	}
	return lines, stamps
}

// TestSessions drives the handler directly, with exact time, through the
// session lifecycle: each case is a script of steps, each step a wait, a
// request and the status it must get.
func TestSessions(t *testing.T) {
	const ttl = 100 * time.Millisecond
	const tick = 8 * time.Nanosecond // the cache's deadline tick
	type step struct {
		wait time.Duration // before the request
		req  string        // "login USER", "login", "whoami", "whoami TOKEN", "whoami-bare", "GET /login"
		want int
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"login then whoami", []step{{0, "login ada", 200}, {0, "whoami", 200}}},
		{"login without user", []step{{0, "login", 400}}},
		{"login with GET", []step{{0, "GET /login", 405}}},
		{"no Authorization header", []step{{0, "login ada", 200}, {0, "whoami-bare", 401}}},
		{"unknown token", []step{{0, "login ada", 200}, {0, "whoami not-a-token", 401}}},
		{"live just before the TTL", []step{{0, "login ada", 200}, {ttl - 1, "whoami", 200}}},
		{"expired exactly at the TTL", []step{{0, "login ada", 200}, {ttl, "whoami", 401}}},
		// The cache keeps deadlines in ticks of 8 ns, rounded down (see
		// cache.Options.TTL): a deadline written at a time that is not a
		// whole tick comes up to 7 ns early. So the refreshes below come a
		// tick before the TTL, not a nanosecond.
		{"refresh moves the deadline", []step{
			{0, "login ada", 200},
			{ttl - tick, "whoami", 200}, // refreshed: now due at 2*(ttl - tick) + tick
			{ttl - tick, "whoami", 200}, // past the login's deadline
			{ttl - tick, "whoami", 200},
			{ttl, "whoami", 401}, // a whole TTL without a request
		}},
		{"a refused request does not revive", []step{
			{0, "login ada", 200}, {ttl, "whoami", 401}, {0, "whoami", 401},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := newSessions(ttl)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				h := s.Handler()
				token := ""
				for i, st := range tc.steps {
					time.Sleep(st.wait)
					verb, arg, _ := strings.Cut(st.req, " ")
					var r *http.Request
					switch verb {
					case "login":
						form := url.Values{}
						if arg != "" {
							form.Set("user", arg)
						}
						r = httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
						r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					case "GET":
						r = httptest.NewRequest(http.MethodGet, arg, nil)
					case "whoami", "whoami-bare":
						r = httptest.NewRequest(http.MethodGet, "/whoami", nil)
						if verb == "whoami" {
							r.Header.Set("Authorization", "Bearer "+cmp.Or(arg, token))
						}
					default:
						t.Fatalf("step %d: bad request %q", i, st.req)
					}
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					body := strings.TrimSpace(w.Body.String())
					if w.Code != st.want {
						t.Fatalf("step %d (%s after %v): got %d %q, want %d", i, st.req, st.wait, w.Code, body, st.want)
					}
					switch {
					case verb == "login" && w.Code == 200:
						if len(body) != 26 {
							t.Fatalf("step %d: got token %q, want 26 characters", i, body)
						}
						token = body
					case verb == "whoami" && w.Code == 200 && body != "ada":
						t.Fatalf("step %d: got user %q, want ada", i, body)
					case w.Code == 401 && w.Header().Get("WWW-Authenticate") == "":
						t.Fatalf("step %d: 401 without WWW-Authenticate", i)
					}
				}
			})
		})
	}
}
