// Command metrics is a small service that exports its ttlkit metrics to
// Prometheus: a session cache, a timing wheel that expires login codes,
// a jobs scheduler and an idle-reaping listener, all on one /metrics
// endpoint.
//
//	go run ./examples/metrics -addr 127.0.0.1:8080
//	curl 'http://127.0.0.1:8080/login?user=ann'
//	curl http://127.0.0.1:8080/metrics
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os/signal"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	svc, err := start(ln)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving on http://%s (/login?user=NAME, /metrics)", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	svc.close()
}
