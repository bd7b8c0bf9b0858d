package sharedcache_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ttlkit/ttlkit/sharedcache"
	"github.com/ttlkit/ttlkit/sharedcache/embedded"
)

// priceService is one instance of an HTTP service that reads prices through
// a shared cache: GET /price?item=tea reads, PUT /price?item=tea with the
// price as body writes.
func priceService(prices *sharedcache.Cache[string], db func(item string) (string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		item := r.URL.Query().Get("item")
		switch r.Method {
		case http.MethodGet:
			p, err := prices.Take(r.Context(), item, func(context.Context) (string, error) { return db(item) })
			if err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			fmt.Fprint(w, p)
		case http.MethodPut:
			body, _ := io.ReadAll(r.Body)
			if err := prices.Set(r.Context(), item, string(body)); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
			}
		}
	})
}

// Two instances of one HTTP service share a cache: the first starts the
// embedded NATS server and listens for the second. A price written through
// one is what the other serves, and a price loaded by one is not loaded
// again by the other.
func Example_httpService() {
	ctx := context.Background()
	var dbReads atomic.Int64
	db := func(item string) (string, error) {
		dbReads.Add(1)
		if item == "coffee" {
			return "2.80", nil
		}
		return "", sharedcache.ErrNotFound
	}
	instance := func(cfg sharedcache.NATSConfig) (*httptest.Server, *sharedcache.NATSStore, func()) {
		store, err := sharedcache.NATS(cfg)
		if err != nil {
			panic(err)
		}
		prices, err := sharedcache.New[string](ctx, store, sharedcache.Options[string]{TTL: time.Hour})
		if err != nil {
			panic(err)
		}
		srv := httptest.NewServer(priceService(prices, db))
		return srv, store, func() { srv.Close(); prices.Close(); store.Close() }
	}
	a, storeA, stopA := instance(sharedcache.NATSConfig{Server: embedded.Server{Listen: "127.0.0.1:0"}})
	defer stopA() // last: its store runs the server
	b, _, stopB := instance(sharedcache.NATSConfig{URL: storeA.ClientURL()})
	defer stopB()

	do := func(method, url, body string) string {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(out))
	}
	do("PUT", a.URL+"/price?item=tea", "3.50")
	fmt.Println("tea on b:", do("GET", b.URL+"/price?item=tea", ""))
	fmt.Println("coffee on a:", do("GET", a.URL+"/price?item=coffee", ""))
	fmt.Println("coffee on b:", do("GET", b.URL+"/price?item=coffee", ""))
	fmt.Println("database reads:", dbReads.Load())
	// Output:
	// tea on b: 3.50
	// coffee on a: 2.80
	// coffee on b: 2.80
	// database reads: 1
}
