package main

// A suite is one `go test -bench` process: every implementation it compares
// runs side by side in that process. Adding a benchmark to the report is
// adding an entry here; a suite whose benchmarks do not exist yet is
// reported as not run.
type suite struct {
	ID    string // short name: -only selects by it, raw output files use it
	Title string // section heading
	About string // a paragraph of markdown under the heading

	// Dir is the module the suite's benchmarks live in, relative to the
	// bench module ("../natsjobs"); "" is the bench module itself.
	Dir string

	Bench     string // the -bench regexp
	Benchtime string // -benchtime in full mode
	// QuickBench and QuickBenchtime replace Bench and Benchtime in -quick
	// mode (which also passes -short); QuickBench "" keeps Bench.
	QuickBench, QuickBenchtime string
	Timeout                    string // -timeout; "" means 30m
	// OneShot marks suites whose benchmarks measure one round per process
	// and report it again on later calls: they always run with -count 1.
	OneShot bool
	// Waits marks suites whose time goes mostly to waiting on the clock
	// (fixed-length attacks, paced jobs, servers' scan intervals), not the
	// CPU: -quick runs each beside the others (see runSuites).
	Waits bool

	// Ratio lists the units ratios are computed on, per table the first
	// one the table has. Baselines are implementations that are reference
	// points rather than peers (the floor, a bare conn): they get ratios but
	// are never the best peer.
	Ratio     []string
	Baselines []string

	// Columns are units shown first in the tables, in this order; the
	// others follow. go test prints the units a benchmark reports sorted
	// by name, which is seldom the order they read best in.
	Columns []string

	// Matrix, when set, is a unit shown first as one compact table per
	// benchmark function: a row per group, a column per implementation,
	// the best peer of each row in bold. The full table (every unit, the
	// ratios) then follows folded in a <details> element.
	Matrix string

	Charts []chart
}

// A chart is one SVG drawn from a suite's results.
type chart struct {
	File  string // under img/
	Title string
	// Units are the metrics drawn. With one unit a chart has one block per
	// group; with several, one block per group and unit.
	Units []string
	// Groups selects the groups drawn by a regexp on "Func/group" (for
	// example "Wheel/SetTimer/pending=1k"); "" draws every group.
	Groups string
	// Trim is removed from the front of group labels ("Wheel/").
	Trim string
	Axis string // value axis label; "" uses the unit's description
	Log  bool   // logarithmic value axis
	// UnitSeries draws each unit as a series of its own, named by the
	// unit without the SeriesTrim suffix, for benchmarks that report every
	// implementation's figure as a unit of one result line
	// ("ttlkit-srv-ns/op", "bare-srv-ns/op") instead of as impl=
	// sub-benchmarks. Blocks are the groups; the first row with the unit
	// gives its value.
	UnitSeries bool
	SeriesTrim string
}

// refImpl is the implementation every table also compares against.
const refImpl = "gozero"

// suites is the whole report, in order.
var suites = []suite{
	{
		ID:    "wheel",
		Title: "Timing wheel: SetTimer, MoveTimer, RemoveTimer",
		About: "Keyed timer operations at 1k and 1M pending timers (interval 1 s, 1024 slots, nothing fires while " +
			"measuring). `cpu-ns/op` is process CPU (getrusage) over the timed region and includes the work a wheel " +
			"hands to its owner goroutine, which wall-clock `ns/op` hides. `B/pending` is heap per pending timer. " +
			"`floor` is a map plus an intrusive list with no clock, no goroutine and no lock: the least a keyed timer " +
			"index can cost, not a usable wheel; `floor+clock` adds the one `time.Now()` per operation that any exact " +
			"design must read.",
		Bench:          `^BenchmarkWheel$`,
		Benchtime:      "300ms",
		QuickBench:     `^BenchmarkWheel$//pending=1k`,
		QuickBenchtime: "200x",
		Ratio:          []string{"cpu-ns/op"},
		Baselines:      []string{"floor", "floor+clock"},
		Charts: []chart{
			{File: "wheel-cpu-1k.svg", Title: "Timing wheel, 1k pending: CPU per operation",
				Units: []string{"cpu-ns/op"}, Groups: `^Wheel/.*/pending=1k$`, Trim: "Wheel/"},
			{File: "wheel-cpu-1M.svg", Title: "Timing wheel, 1M pending: CPU per operation",
				Units: []string{"cpu-ns/op"}, Groups: `^Wheel/.*/pending=1M$`, Trim: "Wheel/"},
			{File: "wheel-bytes.svg", Title: "Timing wheel: heap per pending timer (1M pending)",
				Units: []string{"B/pending"}, Groups: `^Wheel/.*/pending=1M$`, Trim: "Wheel/"},
		},
	},
	{
		ID:    "accuracy",
		Title: "Timing wheel: firing accuracy",
		About: "100,000 timers due 0.5–1.5 s after they are set, on a 1 ms × 2048 wheel. Lateness is callback start " +
			"minus (the moment just before SetTimer + delay); `early` counts timers that fired before their delay " +
			"and `dup` callbacks beyond the first. One round per process.",
		Bench:          `^BenchmarkFiringAccuracy$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Ratio:          []string{"p99-late-ms"},
		Charts: []chart{
			{File: "wheel-lateness.svg", Title: "Timing wheel: firing lateness of 100k timers",
				Units: []string{"p50-late-ms", "p99-late-ms", "max-late-ms"}, Axis: "milliseconds after the deadline (log scale)", Log: true},
		},
	},
	{
		ID:    "wheelstall",
		Title: "Timing wheel: callers during a mass expiry",
		About: "Many timers fall due in one tick; meanwhile a probe keeps calling SetTimer and times each call " +
			"(`p99-call-us`, `max-call-ms`); `expiry-ms` is how long the expiry took. One round per process.",
		Bench:          `^BenchmarkWheelStall$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Ratio:          []string{"max-call-ms"},
		Charts: []chart{
			{File: "wheel-stall.svg", Title: "Timing wheel: longest SetTimer call while 1M timers expire",
				Units: []string{"max-call-ms"}, Axis: "longest SetTimer call, ms (log scale)", Log: true},
		},
	},
	{
		// A process of its own: run after WheelStall in one process, the
		// idle figures came out 10 to 30 times higher (ttlkit 24.6 cpu-ms/s
		// against 0.8 alone), the stall's million timers still being
		// collected.
		ID:    "wheelidle",
		Title: "Timing wheel: CPU of an idle wheel",
		About: "Process CPU per second of wall time while far-off timers are pending and nothing is due " +
			"(interval 10 ms). One round per process.",
		Bench:          `^BenchmarkWheelIdleCPU$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Ratio:          []string{"cpu-ms/s"},
		Charts: []chart{
			{File: "wheel-idle-cpu.svg", Title: "Timing wheel: CPU of an idle wheel with 1M pending timers",
				Units: []string{"cpu-ms/s"}},
		},
	},
	{
		ID:    "wheelmixed",
		Title: "Timing wheel: short timers next to 1M far ones",
		About: "What 1M pending far timers (uniform 1 h – 30 d, none due) add to the process CPU of a wheel busy " +
			"with 2,000 short timers re-armed on every firing (200–500 ms), at 10 ms × 1024 and 1 ms × 2048. Each " +
			"implementation has one wheel whose short timers run throughout; each iteration is a cycle of 2 s " +
			"windows without, with, with and without the far timers, set and removed between windows, with the " +
			"heap collected and returned to the system before every window. `base-ms/s` and `far-ms/s` are the " +
			"mean CPU ms per second of the windows without and with them, `added-ms/s` the difference and " +
			"`added-se-ms/s` its standard error over the cycles; the fires/s columns check that every implementation kept up. " +
			"ttlkit runs the re-arming callback inline (`WithInline`); `afterfunc` is one runtime timer per key. " +
			"Three cycles in one process.",
		Bench:          `^BenchmarkWheelMixed$`,
		Benchtime:      "3x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Ratio:          []string{"far-ms/s"},
		Columns:        []string{"base-ms/s", "far-ms/s", "added-ms/s", "added-se-ms/s", "base-fires/s", "far-fires/s"},
		Charts: []chart{
			{File: "wheel-mixed-cpu.svg", Title: "Timing wheel: CPU of 2,000 re-armed short timers, without and with 1M far timers",
				Units: []string{"base-ms/s", "far-ms/s"}, Trim: "WheelMixed/",
				Axis: "process CPU ms per second of wall time, without (base) and with (far) the far timers"},
			{File: "wheel-mixed-added.svg", Title: "Timing wheel: CPU that 1M far timers add to 2,000 re-armed short timers",
				Units: []string{"added-ms/s"}, Trim: "WheelMixed/",
				Axis: "process CPU ms per second that the far timers add (far − base)"},
		},
	},
	{
		ID:    "cache",
		Title: "Cache: throughput",
		About: "`GetOrSet`: Get, and Set on a miss, from parallel goroutines over 1M keys (Zipf s = 1.01 or uniform), " +
			"capacity 100k, TTL 1 h. `Set`: Set alone in the same shape (overwrites and evicting inserts). `Overwrite`: " +
			"Set of 100k resident keys only, with string values (ttlkit and otter). `Reads`: " +
			"Get only over 100k resident keys, from 2 goroutines, and with Zipf keys also from 8 (on 2 processors). `ns/op` is wall time per operation " +
			"over both cores (throughput); `cpu-ns/op` is process CPU per operation (about 2 × ns/op with both " +
			"cores busy), which other processes on the machine do not inflate.",
		Bench:          `^BenchmarkCache(GetOrSet|Set|Overwrite|Reads)$`,
		Benchtime:      "400ms",
		QuickBenchtime: "2000x",
		Ratio:          []string{"cpu-ns/op"},
		Charts: []chart{
			{File: "cache-cpu.svg", Title: "Cache: CPU per operation",
				Units: []string{"cpu-ns/op"}, Trim: "Cache"},
		},
	},
	{
		ID:    "cachemem",
		Title: "Cache: bytes per entry",
		About: "Heap growth across building a cache and setting n keys (TTL 1 h), after full collections, divided by " +
			"the keys still held; `B/entry` is the mean over n = 47k, 70k, 105k and 160k (`-min`/`-max` the extremes, " +
			"which a hash table's growth steps set apart). `kv=u64`: uint64 keys and values, the 16-byte payload " +
			"included; `kv=str`: string keys and 16-byte []byte values whose bytes are pre-built outside the " +
			"measurement, so what is counted is the cache and the headers it stores. `bound=limit`: capacity n; " +
			"`bound=none`: no capacity, for the caches that allow it. `empty-KiB` is the live heap of the cache built " +
			"empty (capacity 160k when bounded); `held%` the share of the last fill still held. Ristretto is waited " +
			"for after each Set, so it drops none. One round per process.",
		Bench:          `^BenchmarkCacheBytesPerEntry$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Ratio:          []string{"B/entry"},
		Columns:        []string{"B/entry", "B/entry-min", "B/entry-max", "empty-KiB", "held%"},
		Charts: []chart{
			{File: "cache-bytes.svg", Title: "Cache: heap per entry (47k–160k entries)",
				Units: []string{"B/entry"}, Trim: "CacheBytesPerEntry/"},
		},
	},
	{
		ID:    "hitratio",
		Title: "Cache: hit ratio on real traces",
		About: "The first 1M accesses of five real traces (`../shared/traces` from the repository root, or " +
			"`$TTLKIT_TRACES`; a clone without the folder skips them: see its README for formats and sources) " +
			"replayed read-through (Get, then Set after a miss), one goroutine, nothing expires, at 0.1, 1, 5, 10 " +
			"and 25% of each trace's distinct keys (at least 16; loop's two smallest coincide, 24 cells in all). " +
			"Every cache is held to its capacity at every access: otter's maintenance runs inline (a synchronous " +
			"Executor), theine and ristretto are drained by their `Wait` after each Set, the others evict " +
			"synchronously; the replay checks the entry count after every Set and fails beyond the capacity, " +
			"except for golang-lru's ARC, which at times holds one entry more (`over-cap` counts those Sets, " +
			"`max-held` shows the most it held). `exact-lru` is a plain LRU and `belady` Belady's optimum with " +
			"bypass, the ceiling of any policy; no cache may beat it. `cap=mean` rows are the mean over a trace's " +
			"cells, `trace=all` over all 24; `trace=zipf` is CacheGetOrSet's Zipf workload (1M keys, s = 1.01, " +
			"capacity 100k) replayed the same way after 400k uncounted warm-up accesses. `ns/access` is wall " +
			"time per access including the drains, so it flatters no buffered cache. One round per process.",
		Bench:          `^BenchmarkHitRatio$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Ratio:          []string{"hit%"},
		Baselines:      []string{"exact-lru", "belady"},
		Columns:        []string{"hit%", "max-held", "over-cap", "ns/access", "cells"},
		Matrix:         "hit%",
		Charts: []chart{
			{File: "hitratio-mean.svg", Title: "Cache hit ratio: mean per trace, over all 24 cells, and synthetic Zipf",
				Units: []string{"hit%"}, Groups: `^HitRatio/trace=[^/]+/cap=mean$|^HitRatio/trace=zipf/`, Trim: "HitRatio/",
				Axis: "hits per 100 accesses (hit%)"},
			{File: "hitratio-oltp.svg", Title: "Cache hit ratio: OLTP (ARC's CODASYL database trace), by capacity",
				Units: []string{"hit%"}, Groups: `^HitRatio/trace=oltp/`, Trim: "HitRatio/trace=oltp/",
				Axis: "hits per 100 accesses (hit%)"},
			{File: "hitratio-scarab.svg", Title: "Cache hit ratio: Scarab product recommendations, by capacity",
				Units: []string{"hit%"}, Groups: `^HitRatio/trace=scarab/`, Trim: "HitRatio/trace=scarab/",
				Axis: "hits per 100 accesses (hit%)"},
			{File: "hitratio-web12.svg", Title: "Cache hit ratio: web12 (cache2k's web application trace), by capacity",
				Units: []string{"hit%"}, Groups: `^HitRatio/trace=web12/`, Trim: "HitRatio/trace=web12/",
				Axis: "hits per 100 accesses (hit%)"},
			{File: "hitratio-loop.svg", Title: "Cache hit ratio: loop (LIRS looping scan), by capacity",
				Units: []string{"hit%"}, Groups: `^HitRatio/trace=loop/`, Trim: "HitRatio/trace=loop/",
				Axis: "hits per 100 accesses (hit%)"},
			{File: "hitratio-sprite.svg", Title: "Cache hit ratio: sprite (LIRS Sprite file system), by capacity",
				Units: []string{"hit%"}, Groups: `^HitRatio/trace=sprite/`, Trim: "HitRatio/trace=sprite/",
				Axis: "hits per 100 accesses (hit%)"},
		},
	},
	{
		ID:    "cacheexpiry",
		Title: "Cache: expiry accuracy and latency during an expiry storm",
		About: "`Expiry`: 100k keys with a 200 ms TTL; a prober checks that no Get hits after the deadline " +
			"(`late-hits`) or misses before it (`early-misses`); `reclaim-ms` is when the cache holds nothing any " +
			"more, after the last deadline. `MassExpiry`: 1M keys expire at one instant while two goroutines call " +
			"Get and Set on 64Ki other keys; the latency of calls made from that instant on. One round per process.",
		Bench:          `^BenchmarkCache(Expiry|MassExpiry)$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		// No ratios for Expiry: its figures are counts that must be 0 and
		// times near 0, whose ratios mean nothing.
		Ratio: []string{"p99-us"},
		Charts: []chart{
			{File: "cache-mass-expiry.svg", Title: "Cache: Get/Set latency while 1M entries expire at once",
				Units: []string{"p50-us", "p99-us", "p99.9-us"}, Groups: `^CacheMassExpiry$`,
				Axis: "call latency, µs (log scale)", Log: true},
			{File: "cache-reclaim.svg", Title: "Cache: time to reclaim 100k expired entries",
				Units: []string{"reclaim-ms"}, Groups: `^CacheExpiry$`, Axis: "ms after the last deadline"},
		},
	},
	{
		ID:    "safemap",
		Title: "SafeMap: operations",
		About: "Get, Set (overwrite) and DeleteSet from parallel goroutines, Delete from one, over 1k and 1M " +
			"uint64 keys. `rwmap` is a built-in map under a sync.RWMutex.",
		Bench:          `^BenchmarkSafeMap$`,
		Benchtime:      "300ms",
		QuickBenchtime: "2000x",
		Ratio:          []string{"cpu-ns/op"},
		Charts: []chart{
			{File: "safemap-cpu.svg", Title: "SafeMap: CPU per operation",
				Units: []string{"cpu-ns/op"}, Trim: "SafeMap/"},
		},
	},
	{
		ID:    "safemapshrink",
		Title: "SafeMap: memory after deleting down from a peak",
		About: "1M keys set, then deleted down to 5,000: heap still held (`MiB-held`), as a multiple of a fresh " +
			"built-in map of 5,000 entries (`x-fresh`), and the mean cost of the deletes. One round per process.",
		Bench:          `^BenchmarkSafeMapShrink$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Ratio:          []string{"MiB-held"},
		Charts: []chart{
			{File: "safemap-shrink.svg", Title: "SafeMap: heap held after 1M entries shrink to 5,000",
				Units: []string{"MiB-held"}},
		},
	},
	{
		ID:    "cron",
		Title: "Cron: computing the next run",
		About: "`Schedule.Next` of jobs/cron against robfig/cron v3's `SpecSchedule.Next` on the same spec, from " +
			"1,024 random times in 2026 taken in turn. Both return the same instants (checked by " +
			"TestCronMatchesRobfig away from DST changes).",
		Bench:          `^BenchmarkCronNext$`,
		Benchtime:      "300ms",
		QuickBenchtime: "20000x",
		Ratio:          []string{"cpu-ns/op"},
		Charts: []chart{
			{File: "cron-next.svg", Title: "Cron: time per Next",
				Units: []string{"cpu-ns/op"}, Trim: "CronNext/spec=", Log: true},
		},
	},
	{
		ID:    "idle",
		Title: "Idle timeout: loopback echo and reaping",
		About: "`IdleEcho`: one small message echoed over loopback TCP with 10,000 connections open, the server " +
			"in a child process: `bare` has no timeout at all (the baseline), `ttlkit` wraps the listener with " +
			"idletimeout, `deadline` sets a read deadline before every Read. `srv-cpu-ns/op` is the server " +
			"process's own CPU per message (getrusage in the child); `cpu-ns/op` is the clients'. `IdleReap`: " +
			"10,000 connections go idle against a 200 ms IdleTimeout (10 ms Resolution); all must be reaped " +
			"(`reaped`, `idle-err`), none early, and `late` counts those closed later than timeout + 2 × " +
			"Resolution; `min/p50/p99/max-ms` are from the echo to EOF as the client saw it. `IdleEchoRatio`: " +
			"the same echo with the variants (and `wrapper`, a conn wrapper that only forwards Read and Write, and " +
			"`matrix`, idletimeout with first-byte and minimum read and write rates) " +
			"taking turns in rounds, so that the machine's changing load falls on all alike; " +
			"`<variant>-srv-ns/op` is server CPU per message and `a/b` the ratio of two of them.",
		Bench:          `^BenchmarkIdle`,
		Benchtime:      "1s",
		QuickBenchtime: "200x",
		Ratio:          []string{"srv-cpu-ns/op", "cpu-ns/op"},
		Baselines:      []string{"bare"},
		Charts: []chart{
			{File: "idle-echo.svg", Title: "Idle timeout: loopback echo, server CPU per message (10,000 connections)",
				Units: []string{"srv-cpu-ns/op"}, Groups: `^IdleEcho/`, Trim: "IdleEcho/",
				Axis: "server process CPU ns per message (srv-cpu-ns/op)"},
			{File: "idle-echo-interleaved.svg", Title: "Idle timeout: server CPU per message, variants interleaved",
				Units:      []string{"bare-srv-ns/op", "ttlkit-srv-ns/op", "deadline-srv-ns/op", "wrapper-srv-ns/op", "matrix-srv-ns/op"},
				UnitSeries: true, SeriesTrim: "-srv-ns/op", Groups: `^IdleEchoRatio/`, Trim: "IdleEchoRatio/",
				Axis: "server process CPU ns per message"},
		},
	},
	{
		ID:    "idlehttp",
		Title: "Idle timeout against http.Server.IdleTimeout",
		About: "The one job both do: closing HTTP/1.1 keep-alive connections idle between requests, with a 300 ms " +
			"timeout (idletimeout: `IdleTimeout` with its default Resolution, 300/16 ms, and `ConnState`; " +
			"`nethttp`: `http.Server.IdleTimeout`); client and server in this process. `close`: 2,000 " +
			"connections (200 with -short) make one request each and wait; `min/p50/p99/max-ms` run from the " +
			"response to the close as the client saw it, `early` counts closes sooner than the timeout after the " +
			"request was sent, `late` those beyond timeout + 2 × Resolution after the response (idletimeout's " +
			"bound; net/http states none). `request`: keep-alive requests over 1,000 connections per server, the " +
			"servers taking turns in rounds of 2,000 requests; `<impl>-cpu-ns/op` is process CPU (client and " +
			"server) per request, `bare` has no idle timeout. Where each fits: the idletimeout package " +
			"documentation.",
		Bench:          `^BenchmarkHTTPIdle$`,
		Benchtime:      "20000x",
		QuickBenchtime: "2000x",
		Ratio:          []string{"p99-ms"},
		Columns:        []string{"conns", "early", "late", "min-ms", "p50-ms", "p99-ms", "max-ms"},
	},
	{
		ID:    "slowattack",
		Title: "Slow attacks: idletimeout against net/http's timeouts and nginx",
		About: "slowhttptest (Debian's package) against four servers on loopback, one attack at a time: `ttlkit` is a " +
			"Go http.Server on an idletimeout Listener with the recommended HTTP config (IdleTimeout and " +
			"FirstByteTimeout 5s, MinReadRate and MinWriteRate 240 B/s, RateGrace 5s; 2s with -short) and " +
			"`ConnState`, `nethttp` the same server with net/http's `ReadHeaderTimeout` and `IdleTimeout` 5s only, " +
			"`nginx-default` Debian's nginx as shipped (60s timeouts), `nginx-hardened` with its header, body and " +
			"send timeouts and keep-alive at 5s. Attacks: slowloris `-H` and slow body `-B` (data every 3s), slow " +
			"read `-X` (a 1-64 byte window, 32 bytes read every second), range `-R`; 300 connections for 30s " +
			"(40 for 10s with -short). `held-max`: most attack connections open at once; `closed99-s`: seconds " +
			"until 99% were closed as slowhttptest saw it (it notices a close when it next sends, every 3s; the " +
			"test length if never); `unavail-s`: seconds its probe found the service down; `honest-cut`: honest " +
			"clients (half downloading at 2 KB/s, half keep-alive sending a request every 3s) that saw an error or " +
			"a close; `srv-reap99-s`: server-side, seconds from what a limit judged (the first byte read for the read " +
			"rate, the first byte written for the write rate, the accept otherwise) until 99% of the connections " +
			"idletimeout reaped were closed; `reaped-*`: the idletimeout Listener's Stats. slowhttptest's slow read " +
			"(`-X`) counts its connections open until it ends, closed or not. bench/idle_attack_setup.sh installs the tools.",
		Bench:          `^BenchmarkSlowAttack$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Waits:          true,
		Ratio:          []string{"closed99-s"},
		Columns:        []string{"conns", "held-max", "closed99-s", "srv-reap99-s", "unavail-s", "honest", "honest-cut"},
	},
	{
		ID:    "slowattackline",
		Title: "Slow attacks on a raw TCP line protocol",
		About: "An echo server answering each line, no HTTP, on loopback: 300 tricklers (40 with -short) send a byte a " +
			"second and never a newline, while 50 honest clients (10) send a line every 3s and read its answer; 30s " +
			"(10s). `ttlkit` is idletimeout's recommended raw TCP config (IdleTimeout and FirstByteTimeout 5s, " +
			"MinReadRate 240 B/s, RateGrace 5s; 2s with -short), `deadline` the classic idle timeout of a Go " +
			"server, a 5s read deadline before every Read. `closed`: tricklers closed by the server; `closed99-s`: " +
			"seconds from each trickler's first byte until 99% saw the close (the test length if never); " +
			"`srv-reap99-s`: server-side, from the first byte read until 99% of those idletimeout reaped were " +
			"closed; `honest-cut`: honest clients that saw an error.",
		Bench:          `^BenchmarkSlowAttackLine$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Waits:          true,
		Ratio:          []string{"closed99-s"},
		Columns:        []string{"conns", "closed", "closed99-s", "srv-reap99-s", "honest", "honest-cut"},
	},
	{
		ID:    "jobsoneshot",
		Title: "Job schedulers: one-shot jobs on time",
		About: "100,000 one-shot no-op jobs due 0.5–1.5 s after they are added to a running scheduler (to " +
			"robfig/cron before it starts: it re-sorts every entry on each addition while running). gocron gets " +
			"10,000 (`jobs`): v2.21.2 hangs when a one-time job's start has passed before its scheduler goroutine " +
			"takes the job, which happens at 100k. Lateness " +
			"is the run's start minus (the moment just before the add + the delay); `early` counts runs before " +
			"their time and `dup` runs beyond the first; `cpu-ns/job` is process CPU from the first add to the last " +
			"run, per job, which depends less than lateness on how busy the machine is. ttlkit's `jobs` runs on a 1 ms wheel with its default " +
			"8 × GOMAXPROCS workers; gocron v2 arms a runtime timer per job; robfig/cron v3 keeps one sorted " +
			"slice. One round per process.",
		Bench:          `^BenchmarkJobsOneShot$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Ratio:          []string{"p99-late-ms"},
		Charts: []chart{
			{File: "jobs-oneshot-lateness.svg", Title: "Job schedulers: start lateness of 100k one-shot jobs",
				Units: []string{"p50-late-ms", "p99-late-ms", "max-late-ms"}, Axis: "milliseconds after the due time (log scale)", Log: true},
		},
	},
	{
		ID:    "jobscron",
		Title: "Job schedulers: 10,000 jobs every second",
		About: "10,000 no-op jobs on the cron spec `* * * * * *` for 10 s. For every whole second of the window " +
			"each job must run exactly once: `missed` counts (job, second) pairs without a run, `doubled` those " +
			"with more than one. Lateness is a run's start after the second; `goroutines` is the peak number of " +
			"goroutines above the count before the scheduler was made; `cpu-ns/run` is process CPU over the window per " +
			"run. One round per process.",
		Bench:          `^BenchmarkJobsCron$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Ratio:          []string{"p99-late-ms"},
		Charts: []chart{
			{File: "jobs-cron-lateness.svg", Title: "Job schedulers: 10k jobs every second, start after the second",
				Units: []string{"p50-late-ms", "p99-late-ms", "max-late-ms"}, Axis: "milliseconds after the second (log scale)", Log: true},
		},
	},
	{
		ID:    "jobsadd",
		Title: "Job schedulers: adding a job",
		About: "Adding a one-shot job due in an hour to a running scheduler that holds 10k such jobs (1M for " +
			"ttlkit alone: gocron holds about a kilobyte and a runtime timer per job, robfig/cron re-sorts every " +
			"entry on each addition). `cpu-ns/op` is process CPU (getrusage), including the scheduler's own " +
			"goroutines; `B/pending` is heap per pending job.",
		Bench:          `^BenchmarkJobsAdd$`,
		Benchtime:      "2000x",
		QuickBenchtime: "200x",
		Ratio:          []string{"cpu-ns/op"},
		Charts: []chart{
			{File: "jobs-add-cpu.svg", Title: "Job schedulers: CPU per added job (10k pending)",
				Units: []string{"cpu-ns/op"}, Groups: `^JobsAdd/pending=10k$`, Trim: "JobsAdd/", Log: true},
			{File: "jobs-add-bytes.svg", Title: "Job schedulers: heap per pending job (10k pending)",
				Units: []string{"B/pending"}, Groups: `^JobsAdd/pending=10k$`, Trim: "JobsAdd/"},
		},
	},
	{
		ID:    "jobsburst",
		Title: "Job schedulers: a burst of due jobs",
		About: "100,000 no-op one-shot jobs (gocron: 10,000, see above) all due at the same instant. `runs/s` is their number over the time " +
			"from that instant to the last run's start; `cpu-ns/run` is process CPU over that span per run. " +
			"One round per process.",
		Bench:          `^BenchmarkJobsBurst$`,
		Benchtime:      "1x",
		QuickBenchtime: "1x",
		OneShot:        true,
		Ratio:          []string{"cpu-ns/run"},
		Charts: []chart{
			{File: "jobs-burst.svg", Title: "Job schedulers: no-op runs per second in a burst of 100k",
				Units: []string{"runs/s"}},
		},
	},
	{
		ID:    "natsjobs",
		Title: "natsjobs: durable jobs on an embedded NATS JetStream server",
		Dir:   "../natsjobs",
		About: "The nested module `natsjobs`, each benchmark against its own ephemeral embedded server (file storage, " +
			"in this process, reached in memory). Every call returns once JetStream confirmed the job stored. `Enqueue` " +
			"is one call at a time, `EnqueueParallel` 8 goroutines per core, `EnqueueBatch` batches of 1000 due now or in an " +
			"hour, `EnqueueAfter` one call at a time due in an hour, `Cancel` one call at a time of a job due in an hour, " +
			"`Replace` an enqueue of an ID the queue holds (due now over due now, in an hour over in an hour). `Runs` is no-op jobs run by two workers of 8 " +
			"handlers each, up to the last confirmed acknowledgement. `Delayed` is 10,000 jobs due one after the other at " +
			"1k or 5k jobs/s, enqueued while two such workers run them: lateness is a handler's start after the job's time " +
			"(one round per process). `Reopen` is Open on a store holding 100,000 pending jobs, half due now and half in an " +
			"hour. `PendingMemory` is the heap per job due in an hour: `process=client` in a client whose server runs in " +
			"another process, `process=embedded` in the default deployment, client and server in one process. " +
			"`cpu-ns/op` is process CPU (getrusage), client and embedded server together: on a busy machine it " +
			"moves less than the rates do. There is no other implementation to compare with.",
		Bench:          `^Benchmark(Enqueue|EnqueueParallel|EnqueueBatch|EnqueueAfter|Cancel|Replace|Runs|Delayed|Reopen|PendingMemory)$`,
		Benchtime:      "20000x",
		QuickBenchtime: "2000x",
		Timeout:        "10m",
		OneShot:        true,
		Ratio:          []string{"cpu-ns/op"},
		Charts: []chart{
			{File: "natsjobs-enqueue.svg", Title: "natsjobs: jobs stored per second",
				Units: []string{"jobs/s"}, Groups: `^Enqueue`},
			{File: "natsjobs-delayed.svg", Title: "natsjobs: start lateness of 10k delayed jobs",
				Units: []string{"p50-late-ms", "p99-late-ms", "max-late-ms"}, Groups: `^Delayed/`, Trim: "Delayed/",
				Axis: "milliseconds after the due time"},
		},
	},
	{
		ID:    "natsjobsops",
		Title: "natsjobs: a page of the operations API",
		Dir:   "../natsjobs",
		About: "`List` of 50 pending jobs from a paused queue of 10k or 100k jobs on an ephemeral embedded server, " +
			"without a prefix (one direct read per job) and with an ID prefix (batched reads). There is no other " +
			"implementation to compare with.",
		Bench:          `^BenchmarkListPage$`,
		Benchtime:      "200x",
		QuickBench:     `^BenchmarkListPage$/^jobs=10000/`,
		QuickBenchtime: "5x",
		Timeout:        "20m",
		Ratio:          []string{"ns/op"},
	},
	{
		ID:    "durable",
		Title: "Durable job queues: natsjobs, asynq and river",
		Dir:   "durable",
		About: "The nested module `bench/durable`: the same workloads through natsjobs (`natsjobs`: embedded server, file " +
			"storage, in this process; `natsjobs-ext`: the same server as a process of its own, reached over loopback " +
			"TCP), asynq v0.26.0 on redis-server (append-only file fsynced every second) and river v0.51.2 on " +
			"PostgreSQL 15 (its defaults: fsync on every commit), each against a fresh server started on loopback " +
			"with a temporary data directory (`bash durable/install.sh` installs redis-server and PostgreSQL from " +
			"Debian's packages). Peers run with their defaults, except that river's claim on a running job lapses " +
			"after 30 s as natsjobs' AckWait and asynq's lease do (its default is an hour). asynq has no bulk enqueue: " +
			"its `batch=1000` rows are its Enqueue from 8 goroutines. river moves scheduled jobs to available every " +
			"5 s and asynq checks for due ones every 5 s (`DelayedTaskCheckInterval`): their lateness is that " +
			"interval, by design. `Enqueue`: jobs due now, one call at a time from 1 or 8 goroutines, or batches of " +
			"1000. `cpu-us/job` (Enqueue, Run): CPU time of the benchmark process and of the server's processes over " +
			"the timed region, per job, which a machine shared with other load does not inflate the way it slows " +
			"the rates (a client beside a server process of its own gets two processes' share of the cores, an " +
			"embedded server one). `Run`: 20k no-op jobs stored first, run by 2 or 8 handlers, for at most 60 s (`unrun`: not run by then; river's default fetch cadence takes at most MaxWorkers jobs per 100 ms `FetchCooldown`). `Delayed`: 10k jobs due one after the " +
			"other at 1k or 5k jobs/s, stored while 8 handlers run them. `Cancel`: 5k jobs due in 20 s cancelled one " +
			"call at a time; `ran` counts cancelled jobs that ran anyway. `Recovery`: 100k pending jobs, the server " +
			"stopped (SIGTERM) and started again, then 8 handlers: the first run from the server's start, and runs/s until all ran (at most 120 s). " +
			"`ServerMemory`: the server's proportional set size (its process and their descendants) per job due in an hour " +
			"(natsjobs embedded shares its process with the client: left out). `Kill`: 6k jobs of 2 ms in " +
			"a worker process killed with SIGKILL a third of the way (natsjobs embedded: the worker holds the server, " +
			"which dies with it, and the next worker opens its store again); `lost` never finished, `twice` finished twice, " +
			"`rerun` started again (in flight at the kill), `after-confirm` (natsjobs) started again after the server " +
			"confirmed a success, which must never happen; `wait-s` from the kill to the last job done (the ratio: " +
			"`rerun` is the jobs in flight at the kill, and a slower worker has fewer). One round per process. Where a peer leads natsjobs, " +
			"[bench/durable/README.md](../bench/durable/README.md#where-a-peer-leads-and-why) gives the measured reason " +
			"and the design change that would win it.",
		Bench:          `^Benchmark(Enqueue|Run|Delayed|Cancel|Recovery|ServerMemory|Kill)$`,
		Benchtime:      "1x",
		QuickBench:     `^Benchmark(Enqueue|Run|Delayed)$/^(goroutines=1|workers=2|rate=1k)$`,
		QuickBenchtime: "1x",
		Timeout:        "90m",
		OneShot:        true,
		Waits:          true,
		Ratio:          []string{"jobs/s", "runs/s", "p99-late-ms", "cancels/s", "first-run-ms", "B/job", "wait-s"},
		Columns:        []string{"jobs/s", "runs/s", "cpu-us/job", "p50-late-ms", "p99-late-ms", "max-late-ms", "early", "lost", "twice"},
		Charts: []chart{
			{File: "durable-enqueue.svg", Title: "Durable queues: jobs stored per second",
				Units: []string{"jobs/s"}, Groups: `^Enqueue/`, Trim: "Enqueue/", Log: true},
			{File: "durable-run.svg", Title: "Durable queues: no-op runs per second",
				Units: []string{"runs/s"}, Groups: `^Run/`, Trim: "Run/", Log: true},
			{File: "durable-delayed.svg", Title: "Durable queues: p99 start lateness of delayed jobs",
				Units: []string{"p99-late-ms"}, Groups: `^Delayed/`, Trim: "Delayed/", Log: true,
				Axis: "milliseconds after the due time (log scale)"},
			{File: "durable-memory.svg", Title: "Durable queues: server memory per pending job",
				Units: []string{"B/job"}, Groups: `^ServerMemory`},
		},
	},
	{
		ID:    "sharedcache",
		Title: "sharedcache: a hit on the local copy",
		Dir:   "../sharedcache",
		About: "The nested module `sharedcache`: a Get answered by the instance's local copy against a Get of a plain " +
			"ttlkit `cache` holding the same 1024 entries, from every core (`RunParallel`). With `StaleIfError` a hit reads " +
			"the clock once more. The target is at most 1.2x the plain cache. `cpu-ns/op` is process CPU (getrusage) " +
			"over the timed region, both cores together.",
		Bench:          `^BenchmarkL1Hit$`,
		Benchtime:      "1s",
		QuickBenchtime: "20000x",
		Ratio:          []string{"cpu-ns/op"},
		Baselines:      []string{"ttlkit-cache"},
	},
	{
		ID:    "sharedcacheprocs",
		Title: "sharedcache: invalidation and cold keys across processes",
		Dir:   "../sharedcache",
		About: "Instances of `sharedcache` as processes of their own (the test binary run again) on one store: the " +
			"embedded NATS server of the test process, reached over loopback TCP, or redis-server from Debian's package. " +
			"`Invalidation`: three instances, each round one sets a key the two others hold locally; latency runs from the " +
			"writer's return to another's first Get of the new value (woken by the event), wall clock of one machine, p50, " +
			"p99 and max over all rounds. `ColdKeyLoads`: 3 or 6 instances Take one new key at once, the loader returning " +
			"at once; `loads/key` counts loader calls across them (the target is 1), `waits/key` the Takes that waited " +
			"for another's load. The commands travel over pipes, so ns/op is the round, not the cache.",
		Bench:          `^Benchmark(Invalidation|ColdKeyLoads)$`,
		Benchtime:      "300x",
		QuickBenchtime: "20x",
		Ratio:          []string{"p99-µs", "loads/key"},
		Columns:        []string{"p50-µs", "p99-µs", "max-µs", "loads/key", "waits/key"},
	},
	{
		ID:    "sharedcachel2",
		Title: "sharedcache: a read answered by the store, against go-zero's cache",
		Dir:   "sharedcache",
		About: "The nested module `bench/sharedcache` (it keeps go-zero out of `sharedcache`): one read at a time of a " +
			"key answered by the shared store, each key written before the timer and read once. `gozero` is go-zero " +
			"v1.10.3 `core/stores/cache` Get (GET and a JSON decode); `sharedcache` a local miss (GET, JSON decode, the " +
			"local copy kept) through another instance than the writer; `rueidis-get` and `nats-kv-get` a plain GET of " +
			"the same bytes, the floor. One redis-server from Debian's package, or one embedded NATS server reached over " +
			"loopback TCP.",
		Bench:          `^BenchmarkL2Hit$`,
		Benchtime:      "5000x",
		QuickBenchtime: "200x",
		Ratio:          []string{"ns/op"},
		Baselines:      []string{"rueidis-get", "nats-kv-get"},
	},
}
