// Package console is a web console for natsjobs queues: an http.Handler
// that a service mounts to show its queues (counts, rates, paused or
// not), their jobs by state with a search by ID prefix, a job's payload,
// headers, attempts and last error, and the dead letters, and to pause and
// resume queues, cancel jobs and redrive or delete dead letters.
//
//	c, _ := natsjobs.Open(ctx, cfg)
//	con, _ := console.New(c, console.Options{
//		Authorize: func(r *http.Request, a console.Action) bool {
//			return isAdmin(r) // your own authentication
//		},
//	})
//	mux.Handle("/admin/jobs/", http.StripPrefix("/admin/jobs", con))
//
// Pages are rendered on the server (html/template, every value escaped)
// with their CSS inline: no external asset, no JavaScript. They refresh
// themselves every Options.Refresh. The console is read-only unless
// Options.Authorize allows an action: an action is shown only to requests
// it allows, and every action is a POST checked against cross-site
// requests twice, by the browser's Sec-Fetch-Site or Origin header
// (http.CrossOriginProtection) and by a token bound to a cookie. Links are
// relative, so the console works under any path prefix.
//
// How it is built, and why: doc/design/natsjobs.md.
package console
