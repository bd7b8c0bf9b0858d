package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/ttlkit/ttlkit/jobs"
	"github.com/ttlkit/ttlkit/natsjobs"
	"github.com/ttlkit/ttlkit/natsjobs/console"
	"github.com/ttlkit/ttlkit/natsjobs/embedded"
)

var screenshots = flag.String("screenshots", "", "write the console's screenshots (console.png, console-dead.png, console-job.png) into this directory (the README's: ../../../doc)")

// chromium finds the browser: $CHROMIUM, or chromium on the PATH (Debian's
// package). Without it the test skips, except under CI=true, where it fails.
func chromium(t *testing.T) string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found (CI=true: .ci/run installs Debian's chromium package)")
	}
	t.Skip("chromium not found: apt-get install chromium (CI installs it)")
	return ""
}

// shop fills an embedded server with the queues of a small shop: orders
// (pending and scheduled jobs, two dead letters) and emails (a worker
// sending them).
func shop(t *testing.T) *natsjobs.Client {
	t.Helper()
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"orders", "emails", "reports"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dead := make(chan natsjobs.DeadLetter, 4)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- c.Work(wctx, "orders", func(ctx context.Context, r natsjobs.Run) error {
			return jobs.Permanent(fmt.Errorf("payment provider: card declined for %s (code 51)", r.ID))
		}, natsjobs.WorkOptions{DeadLetter: func(d natsjobs.DeadLetter) { dead <- d }})
	}()
	for _, id := range []string{"refund-7", "refund-8"} {
		if err := c.Enqueue(ctx, natsjobs.Job{Queue: "orders", ID: id, Payload: []byte(`{"refund":"` + id + `","amount":"19.90 EUR"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		select {
		case <-dead:
		case <-time.After(30 * time.Second):
			t.Fatal("no dead letter within 30 s")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(ctx, "reports"); err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(ctx, natsjobs.Job{Queue: "reports", ID: "weekly-sales"}); err != nil {
		t.Fatal(err)
	}
	if err := c.EnqueueCron(ctx, natsjobs.Job{Queue: "reports", ID: "nightly"}, "30 2 * * *", nil); err != nil {
		t.Fatal(err)
	}
	// orders has no worker in this test: its jobs stay pending.
	for i, id := range []string{"order-1042", "order-1043", "order-1044"} {
		j := natsjobs.Job{Queue: "orders", ID: id, Payload: []byte(fmt.Sprintf(`{"order":%q,"items":%d,"note":"<script>alert(1)</script>"}`, id, i+1)), Header: map[string]string{"Tenant": "acme"}}
		if err := c.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range []time.Duration{15 * time.Minute, 2 * time.Hour} {
		if err := c.EnqueueAfter(ctx, natsjobs.Job{Queue: "orders", ID: fmt.Sprintf("unpaid-%d", 2000+i)}, d); err != nil {
			t.Fatal(err)
		}
	}
	// emails has a worker, so that the console shows rates.
	wctx, stopEmails := context.WithCancel(ctx)
	t.Cleanup(stopEmails)
	go c.Work(wctx, "emails", func(ctx context.Context, r natsjobs.Run) error { return nil }, natsjobs.WorkOptions{Concurrency: 4})
	return c
}

func sendEmails(t *testing.T, c *natsjobs.Client, from, n int) {
	t.Helper()
	batch := make([]natsjobs.Job, n)
	for i := range batch {
		batch[i] = natsjobs.Job{Queue: "emails", ID: fmt.Sprintf("welcome-%d", from+i)}
	}
	if err := c.EnqueueBatch(context.Background(), time.Time{}, batch...); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleInBrowser clicks through the console as an operator would:
// pause a queue, redrive a dead letter, find and cancel a job, resume the
// queue, checking the server's state after each click.
func TestConsoleInBrowser(t *testing.T) {
	exe := chromium(t)
	c := shop(t)
	con, err := console.New(c, console.Options{
		Title:     "shop jobs",
		Refresh:   time.Minute, // no reload in the middle of a click; TestAutoRefresh covers it
		Authorize: func(*http.Request, console.Action) bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/jobs/", http.StripPrefix("/admin/jobs", con))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base := srv.URL + "/admin/jobs/"

	ctx := browser(t, exe)
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	sendEmails(t, c, 0, 300)
	run(t, ctx, "open the queues page",
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(`#queue-orders .badge.active`)))
	time.Sleep(1500 * time.Millisecond) // let the emails' rates build up a sample 1.5 s apart
	sendEmails(t, c, 300, 300)

	// Pause orders.
	run(t, ctx, "pause orders",
		chromedp.Click(chromedp.CSS(`#queue-orders button[name=pause]`)),
		chromedp.WaitVisible(chromedp.CSS(`#queue-orders .badge.paused`)))
	flash(t, ctx, "orders paused")
	if st, err := c.QueueStats(ctx, "orders"); err != nil || !st.Paused {
		t.Fatalf("after clicking Pause: paused %v, %v", st.Paused, err)
	}
	shot(t, ctx, "console.png")

	// Redrive one dead letter from the orders' dead letters.
	run(t, ctx, "open the dead letters",
		chromedp.Click(chromedp.CSS(`#queue-orders a[href*="state=dead"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#job-refund-8`)))
	errText := text(t, ctx, `#job-refund-7 td.err`)
	if !strings.Contains(errText, "card declined for refund-7") {
		t.Errorf("dead letter's error %q, want the handler's", errText)
	}
	shot(t, ctx, "console-dead.png")
	run(t, ctx, "redrive refund-7",
		chromedp.Click(chromedp.CSS(`#job-refund-7 button[name=redrive]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#job-refund-7`)))
	flash(t, ctx, "1 dead letter redriven")
	if j, err := c.Get(ctx, "orders", "refund-7"); err != nil || j.State != natsjobs.Pending {
		t.Fatalf("refund-7 after Redrive: %v, %v; want pending", j.State, err)
	}

	// Search the pending jobs, open one and cancel it.
	run(t, ctx, "search order-104",
		chromedp.Click(chromedp.CSS(`nav.tabs a[href*="state=pending"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#job-refund-7`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=prefix]`), "order-104"),
		chromedp.Submit(chromedp.CSS(`input[name=prefix]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#job-refund-7`)),
		chromedp.WaitVisible(chromedp.CSS(`#job-order-1043`)))
	run(t, ctx, "open order-1043",
		chromedp.Click(chromedp.CSS(`#job-order-1043 a`)),
		chromedp.WaitVisible(chromedp.CSS(`#payload`)))
	payload := text(t, ctx, `#payload`)
	shot(t, ctx, "console-job.png")
	if !strings.Contains(payload, `"note": "<script>alert(1)</script>"`) {
		t.Errorf("payload shown as %q, want the JSON with its <script> text shown, not run", payload)
	}
	run(t, ctx, "cancel order-1043",
		chromedp.Click(chromedp.CSS(`button[name=cancel]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	flash(t, ctx, "1 job cancelled")
	if _, err := c.Get(ctx, "orders", "order-1043"); !errors.Is(err, natsjobs.ErrNotFound) {
		t.Fatalf("order-1043 after Cancel: %v, want ErrNotFound", err)
	}

	// Resume orders from the queues page.
	run(t, ctx, "resume orders",
		chromedp.Click(chromedp.CSS(`header a.title`)),
		chromedp.WaitVisible(chromedp.CSS(`#queue-orders button[name=resume]`)),
		chromedp.Click(chromedp.CSS(`#queue-orders button[name=resume]`)),
		chromedp.WaitVisible(chromedp.CSS(`#queue-orders .badge.active`)))
	if st, err := c.QueueStats(ctx, "orders"); err != nil || st.Paused {
		t.Fatalf("after clicking Resume: paused %v, %v", st.Paused, err)
	}
}

// TestAutoRefresh: a page reloads itself and shows what changed.
func TestAutoRefresh(t *testing.T) {
	exe := chromium(t)
	ctx := context.Background()
	c, err := natsjobs.Open(ctx, natsjobs.Config{Server: embedded.Server{Ephemeral: true}, Queues: []string{"q"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	con, err := console.New(c, console.Options{Refresh: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	defer srv.Close()
	bctx := browser(t, exe)
	bctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	run(t, bctx, "open", chromedp.Navigate(srv.URL+"/?q=q"), chromedp.WaitVisible(chromedp.CSS(`.empty`)))
	if err := c.Enqueue(ctx, natsjobs.Job{Queue: "q", ID: "arrived"}); err != nil {
		t.Fatal(err)
	}
	run(t, bctx, "see the new job without a click", chromedp.WaitVisible(chromedp.CSS(`#job-arrived`)))
}

// browser starts headless Chromium with a fresh profile.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 640),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage:\n%s", step, err, html)
	}
}

// text returns the text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// flash checks the message the last action left on the page.
func flash(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	got := text(t, ctx, `.flash`)
	if strings.TrimSpace(got) != want {
		t.Errorf("outcome %q, want %q", got, want)
	}
}

// shot takes a screenshot of the page: into -screenshots if set, else
// into a temporary directory (so that CI takes them too).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot %s: not a PNG (%d bytes)", name, len(png))
	}
	dir := *screenshots
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
