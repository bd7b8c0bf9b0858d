package console_test

import (
	"context"
	"log"
	"net/http"

	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/console"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

// Mount the console under /admin/jobs/ of a service's mux; only requests
// your own authentication marks as admins may act, others may look.
func ExampleNew() {
	c, err := natsjobs.Open(context.Background(), natsjobs.Config{Server: embedded.Server{StoreDir: "/var/lib/shop/jobs"}, Queues: []string{"orders"}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	isAdmin := func(r *http.Request) bool { return r.Header.Get("X-Role") == "admin" } // yours
	con, err := console.New(c, console.Options{
		Authorize: func(r *http.Request, a console.Action) bool {
			return isAdmin(r) && a.Kind != console.DeleteDead // nobody deletes from the console
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/jobs/", http.StripPrefix("/admin/jobs", con))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
