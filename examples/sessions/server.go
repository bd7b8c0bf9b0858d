package main

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ttlkit/ttlkit/cache"
)

// sessions is the session API. Tokens live in a cache whose TTL is the
// session's idle lifetime; every authenticated request touches its token,
// which moves the deadline one TTL later.
//
// A refresh is Cache.Touch: for a live entry, the later deadline is only
// recorded in the entry, with no lock beyond the key's shard and no
// message to the cache's timing wheel. The wheel's timer stays where it
// was; when it fires and finds the deadline moved, it re-arms itself for the
// remainder. So a session costs about one wheel operation per TTL, however
// many requests refresh it, and reclaiming it costs nothing on the request
// path.
type sessions struct {
	ttl    time.Duration
	tokens *cache.Cache[string, string] // token -> user name
}

// newSessions returns a session store whose sessions end after ttl without
// a request.
func newSessions(ttl time.Duration) (*sessions, error) {
	tokens, err := cache.New(cache.Options[string, string]{TTL: ttl, Name: "sessions"})
	if err != nil {
		return nil, err
	}
	return &sessions{ttl: ttl, tokens: tokens}, nil
}

// Close stops the store's expiry goroutine and drops every session.
func (s *sessions) Close() error { return s.tokens.Close() }

// Len returns the number of sessions held, including any whose deadline
// has passed within the last tick and which are not reclaimed yet.
func (s *sessions) Len() int { return s.tokens.Len() }

// Handler returns the HTTP API:
//
//	POST /login   form value user      200, body: a new token
//	GET  /whoami  Authorization: Bearer TOKEN
//	              200, body: the user, and the session lives one more TTL
//	              401 if the token is unknown or its session expired
func (s *sessions) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /whoami", s.whoami)
	return mux
}

func (s *sessions) login(w http.ResponseWriter, r *http.Request) {
	user := r.FormValue("user")
	if user == "" {
		http.Error(w, "form value user is required", http.StatusBadRequest)
		return
	}
	token := rand.Text() // 26 characters, 130 random bits
	s.tokens.Set(token, user)
	fmt.Fprintln(w, token)
}

func (s *sessions) whoami(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	user, found := "", false
	if ok {
		user, found = s.tokens.Get(token) // never a session past its deadline
	}
	if !found {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "no session: log in again", http.StatusUnauthorized)
		return
	}
	// The refresh. Touch restarts the TTL of a live entry only: a session
	// that expired, or that a logout Deleted, since the Get above is not
	// brought back (a Get followed by a Set would revive it). The request
	// itself was authenticated while the session was live.
	s.tokens.Touch(token)
	fmt.Fprintln(w, user)
}
