package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ttlkit/ttlkit/natsjobs"
)

// Options configure a Console. The zero value is a read-only console of
// every queue, refreshed every 5 s.
type Options struct {
	// Authorize reports whether the request may perform the action. It is
	// called for every action shown on a page (to show it or not) and for
	// every action posted; it runs on the request's goroutine. Nil
	// allows nothing: a read-only console.
	Authorize func(r *http.Request, a Action) bool
	// Refresh is how often pages reload themselves. Zero means 5 s; a
	// negative value turns reloading off.
	Refresh time.Duration
	// Queues limits the console to these queues. Empty: every queue the
	// server has (natsjobs.Client.Queues).
	Queues []string
	// Title heads every page. Empty means "natsjobs".
	Title string
}

// Kind is the kind of an Action. The zero Kind is invalid.
type Kind int

// The actions a console offers.
const (
	Pause      Kind = iota + 1 // pause a queue
	Resume                     // resume a queue
	Cancel                     // cancel jobs (natsjobs.Client.Cancel)
	Redrive                    // redrive dead letters
	DeleteDead                 // delete dead letters
)

var kindNames = [...]string{Pause: "pause", Resume: "resume", Cancel: "cancel", Redrive: "redrive", DeleteDead: "delete"}

// String returns "pause", "resume", "cancel", "redrive" or "delete".
func (k Kind) String() string {
	if k >= Pause && k <= DeleteDead {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

func parseKind(s string) Kind {
	for k := Pause; k <= DeleteDead; k++ {
		if kindNames[k] == s {
			return k
		}
	}
	return 0
}

// Action is what a user asks the console to do, as Options.Authorize
// sees it.
type Action struct {
	Kind  Kind
	Queue string
	// IDs are the jobs or dead letters of Cancel, Redrive and DeleteDead.
	IDs []string
	// Prefix, for Redrive and DeleteDead, selects the dead letters whose
	// IDs start with it; All selects every dead letter of the queue.
	Prefix string
	All    bool
}

// Console is the console's http.Handler. It is safe for concurrent use.
type Console struct {
	c    *natsjobs.Client
	opts Options
	key  [32]byte // signs the cross-site request tokens
	csrf *http.CrossOriginProtection

	mu      sync.Mutex
	samples map[string]natsjobs.QueueStats // per queue: the sample rates are measured from
}

// New returns a console of c's queues. It fails (natsjobs.ErrInvalid) for
// a nil Client or an empty name in Options.Queues.
func New(c *natsjobs.Client, o Options) (*Console, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: console: nil Client", natsjobs.ErrInvalid)
	}
	for _, q := range o.Queues {
		if q == "" {
			return nil, fmt.Errorf("%w: console: empty queue name in Options.Queues", natsjobs.ErrInvalid)
		}
	}
	if o.Refresh == 0 {
		o.Refresh = 5 * time.Second
	}
	if o.Title == "" {
		o.Title = "natsjobs"
	}
	o.Queues = slices.Clone(o.Queues)
	h := &Console{c: c, opts: o, csrf: http.NewCrossOriginProtection(), samples: map[string]natsjobs.QueueStats{}}
	rand.Read(h.key[:])
	return h, nil
}

// ServeHTTP serves the pages (GET, HEAD) and the actions (POST). The
// request's path is not used, only its query, so the console can be
// mounted anywhere.
func (h *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.get(w, r)
	case http.MethodPost:
		h.post(w, r)
	default:
		hdr.Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// cookieName holds the random value that the forms' tokens are bound to.
const cookieName = "natsjobs_console"

// token returns the request's cross-site request token, setting the
// cookie it is bound to if the request has none.
func (h *Console) token(w http.ResponseWriter, r *http.Request) string {
	v := ""
	if ck, err := r.Cookie(cookieName); err == nil && len(ck.Value) == 32 {
		v = ck.Value
	} else {
		var b [16]byte
		rand.Read(b[:])
		v = hex.EncodeToString(b[:])
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: v, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	}
	return h.sign(v)
}

func (h *Console) sign(v string) string {
	m := hmac.New(sha256.New, h.key[:])
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// errForbidden is a refused cross-site request.
var errForbidden = errors.New("cross-site request refused: reload the page and try again")

// checkToken verifies the form's token against the request's cookie.
func (h *Console) checkToken(r *http.Request) error {
	if err := h.csrf.Check(r); err != nil {
		return errForbidden
	}
	ck, err := r.Cookie(cookieName)
	if err != nil || len(ck.Value) != 32 {
		return errForbidden
	}
	if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(h.sign(ck.Value))) {
		return errForbidden
	}
	return nil
}

// allowed reports whether Options.Authorize allows a for r.
func (h *Console) allowed(r *http.Request, a Action) bool {
	return h.opts.Authorize != nil && h.opts.Authorize(r, a)
}

// queueAllowed reports whether the console shows queue q.
func (h *Console) queueAllowed(q string) bool {
	return len(h.opts.Queues) == 0 || slices.Contains(h.opts.Queues, q)
}

// rates returns the rates of st since the queue's sample, if that is 1 to
// 30 s old, and keeps st as the next sample when the kept one is 10 s old
// or unusable: every viewer sees rates over the last 1 to 10 s (20 s
// with a refresh of 10 s), however often pages load.
func (h *Console) rates(st natsjobs.QueueStats) (natsjobs.Rates, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev, ok := h.samples[st.Queue]
	age := st.At.Sub(prev.At)
	if !ok || age < 0 || age > 30*time.Second {
		h.samples[st.Queue] = st
		return natsjobs.Rates{}, false
	}
	if age >= 10*time.Second {
		h.samples[st.Queue] = st
	}
	if age < time.Second {
		return natsjobs.Rates{}, false
	}
	return st.Rates(prev), true
}
