package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	ttl   = 300 * time.Millisecond // a session's lifetime without requests
	every = 50 * time.Millisecond  // alice's pace: well inside the TTL
	steps = 14                     // alice's requests after the first: 700ms
)

// run serves the session API on ln and, with client, plays two users
// against it, narrating to out. alice logs in and makes a request every
// 50ms; bob logs in, makes one request at 100ms and goes quiet. At 700ms,
// two TTLs after bob's last request, bob is refused and alice is still
// logged in. run closes ln and the server before it returns.
//
// Stamps are the time since the demo began, rounded to 10ms. The test runs
// run over an in-memory listener inside a testing/synctest bubble, where
// they are exact; over loopback they may be a little later, never earlier.
func run(out io.Writer, ln net.Listener, client *http.Client) error {
	s, err := newSessions(ttl)
	if err != nil {
		ln.Close()
		return err
	}
	defer s.Close()
	srv := &http.Server{Handler: s.Handler()}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Close()
		<-served
		client.CloseIdleConnections()
	}()

	d := &demo{client: client, base: "http://" + ln.Addr().String(), out: out, start: time.Now()}
	fmt.Fprintf(out, "sessions live %v without a request; every request refreshes its own\n", ttl)
	alice, err := d.login("alice")
	if err != nil {
		return err
	}
	bob, err := d.login("bob")
	if err != nil {
		return err
	}
	for i := 0; i <= steps; i++ {
		d.at(time.Duration(i) * every)
		if i == steps {
			if err := d.show("bob", bob, "two TTLs after his last request"); err != nil {
				return err
			}
		}
		code, body, err := d.whoami(alice)
		if err != nil {
			return err
		}
		// alice's requests are printed where the story needs them, and
		// whenever one fails.
		switch {
		case i == 0:
			d.report("alice", code, body, "and again every 50ms")
		case i == 7:
			d.report("alice", code, body, "past the TTL since her login: refreshed")
		case i == steps:
			d.report("alice", code, body, fmt.Sprintf("after %d requests, still logged in", steps+1))
		case code != http.StatusOK:
			d.report("alice", code, body, "")
		}
		if i == 2 {
			if err := d.show("bob", bob, "his last request"); err != nil {
				return err
			}
		}
	}
	d.say("server holds %d session: bob's was reclaimed by the wheel", s.Len())
	return nil
}

// demo is the client side of the demo, and its narrator.
type demo struct {
	client *http.Client
	base   string
	out    io.Writer
	start  time.Time
}

// say prints one line stamped with the time since the demo began.
func (d *demo) say(format string, args ...any) {
	ms := time.Since(d.start).Round(10 * time.Millisecond).Milliseconds()
	fmt.Fprintf(d.out, "%5dms  %s\n", ms, fmt.Sprintf(format, args...))
}

// at waits until t after the demo began: an absolute schedule, so waits do
// not add up their overshoot.
func (d *demo) at(t time.Duration) { time.Sleep(time.Until(d.start.Add(t))) }

// login logs user in and returns the token.
func (d *demo) login(user string) (string, error) {
	resp, err := d.client.PostForm(d.base+"/login", url.Values{"user": {user}})
	if err != nil {
		return "", err
	}
	body, err := readBody(resp)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK || body == "" {
		return "", fmt.Errorf("login %s: %s %q", user, resp.Status, body)
	}
	d.say("%-5s  POST /login   %d  token issued", user, resp.StatusCode)
	return body, nil
}

// whoami makes a request with token and returns the answer.
func (d *demo) whoami(token string) (code int, body string, err error) {
	req, err := http.NewRequest(http.MethodGet, d.base+"/whoami", nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	body, err = readBody(resp)
	return resp.StatusCode, body, err
}

// show makes user's request with token and narrates the answer.
func (d *demo) show(user, token, note string) error {
	code, body, err := d.whoami(token)
	if err != nil {
		return err
	}
	d.report(user, code, body, note)
	return nil
}

// report narrates the answer to one of user's requests.
func (d *demo) report(user string, code int, body, note string) {
	if note != "" {
		note = "  (" + note + ")"
	}
	d.say("%-5s  GET  /whoami  %d  %s%s", user, code, body, note)
}

// readBody reads and closes resp's body, trimmed of surrounding space.
func readBody(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if err != nil {
		return "", errors.Join(errors.New("reading response"), err)
	}
	return strings.TrimSpace(string(b)), nil
}
