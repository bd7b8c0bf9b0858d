package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/ttlkit/ttlkit/natsjobs"
)

// cmdFlags are the flags of single commands (dispatch checks that each
// is given only to a command that takes it).
type cmdFlags struct {
	state    string
	prefix   string
	limit    int
	after    uint64
	all      bool
	yes      bool
	interval time.Duration
}

var cmdFlagNames = []string{"state", "prefix", "limit", "after", "all", "yes", "interval"}

func (f *cmdFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.state, "state", "pending", "ls: pending, scheduled, running or dead")
	fs.StringVar(&f.prefix, "prefix", "", "ls, dead: only IDs starting with this")
	fs.IntVar(&f.limit, "limit", 50, "ls, dead ls: jobs per page (1-1000)")
	fs.Uint64Var(&f.after, "after", 0, "ls, dead ls: the cursor printed after the previous page")
	fs.BoolVar(&f.all, "all", false, "dead redrive, dead rm: every dead letter")
	fs.BoolVar(&f.yes, "yes", false, "purge: yes, remove the jobs")
	fs.DurationVar(&f.interval, "interval", time.Second, "stats: measure rates over this long (0: no rates)")
}

func (f *cmdFlags) owns(name string) bool {
	for _, n := range cmdFlagNames {
		if n == name {
			return true
		}
	}
	return false
}

func commands(o *out, f *cmdFlags) map[string]command {
	return map[string]command{
		"queues": {nil, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			if err := wantArgs(args, 0, 0, "no arguments"); err != nil {
				return err
			}
			names, err := c.Queues(ctx)
			if err != nil {
				return err
			}
			stats := make([]natsjobs.QueueStats, 0, len(names))
			for _, q := range names {
				st, err := c.QueueStats(ctx, q)
				if err != nil {
					return err
				}
				stats = append(stats, st)
			}
			return o.queues(stats)
		}},
		"ls": {[]string{"state", "prefix", "limit", "after"}, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			if err := wantArgs(args, 1, 1, "QUEUE"); err != nil {
				return err
			}
			st, err := natsjobs.ParseState(f.state)
			if err != nil {
				return err
			}
			return list(ctx, c, o, args[0], natsjobs.ListOptions{State: st, Prefix: f.prefix, Limit: f.limit, After: f.after})
		}},
		"dead ls": {[]string{"prefix", "limit", "after"}, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			if err := wantArgs(args, 1, 1, "QUEUE"); err != nil {
				return err
			}
			return list(ctx, c, o, args[0], natsjobs.ListOptions{State: natsjobs.Dead, Prefix: f.prefix, Limit: f.limit, After: f.after})
		}},
		"show": {nil, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			if err := wantArgs(args, 2, 2, "QUEUE ID"); err != nil {
				return err
			}
			j, err := c.Get(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return o.job(j)
		}},
		"cancel": {nil, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			if err := wantArgs(args, 2, -1, "QUEUE ID..."); err != nil {
				return err
			}
			var missing []string
			for _, id := range args[1:] {
				ok, err := c.Cancel(ctx, args[0], id)
				if err != nil {
					return err
				}
				if !ok {
					missing = append(missing, id)
				}
			}
			return o.done(len(args)-1-len(missing), len(args)-1, "cancelled", missing)
		}},
		"pause": {nil, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			if err := wantArgs(args, 1, 1, "QUEUE"); err != nil {
				return err
			}
			if err := c.Pause(ctx, args[0]); err != nil {
				return err
			}
			return o.message(args[0] + ": paused")
		}},
		"resume": {nil, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			if err := wantArgs(args, 1, 1, "QUEUE"); err != nil {
				return err
			}
			if err := c.Resume(ctx, args[0]); err != nil {
				return err
			}
			return o.message(args[0] + ": resumed")
		}},
		"purge": {[]string{"yes"}, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			if err := wantArgs(args, 1, 1, "QUEUE"); err != nil {
				return err
			}
			if !f.yes {
				return usageErr("purge removes every job of %s that is not dead: add --yes", args[0])
			}
			n, err := c.Purge(ctx, args[0])
			if err != nil {
				return err
			}
			return o.done(n, n, "removed", nil)
		}},
		"dead redrive": {[]string{"prefix", "all"}, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			return dead(ctx, c, o, f, args, "redriven", c.RedriveDead)
		}},
		"dead rm": {[]string{"prefix", "all"}, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			return dead(ctx, c, o, f, args, "deleted", c.DeleteDead)
		}},
		"stats": {[]string{"interval"}, func(ctx context.Context, c *natsjobs.Client, args []string) error {
			if err := wantArgs(args, 1, -1, "QUEUE..."); err != nil {
				return err
			}
			if f.interval < 0 {
				return usageErr("--interval must not be negative")
			}
			first := make([]natsjobs.QueueStats, len(args))
			for i, q := range args {
				st, err := c.QueueStats(ctx, q)
				if err != nil {
					return err
				}
				first[i] = st
			}
			if f.interval == 0 {
				return o.stats(first, nil)
			}
			select {
			case <-time.After(f.interval):
			case <-ctx.Done():
				return ctx.Err()
			}
			second := make([]natsjobs.QueueStats, len(args))
			for i, q := range args {
				st, err := c.QueueStats(ctx, q)
				if err != nil {
					return err
				}
				second[i] = st
			}
			return o.stats(second, first)
		}},
	}
}

func list(ctx context.Context, c *natsjobs.Client, o *out, queue string, lo natsjobs.ListOptions) error {
	p, err := c.List(ctx, queue, lo)
	if err != nil {
		return err
	}
	return o.page(p)
}

// dead runs dead redrive or dead rm: IDs, --prefix or --all.
func dead(ctx context.Context, c *natsjobs.Client, o *out, f *cmdFlags, args []string, verb string, fn func(context.Context, string, natsjobs.Select) (int, error)) error {
	if err := wantArgs(args, 1, -1, "QUEUE (ID... | --prefix P | --all)"); err != nil {
		return err
	}
	sel := natsjobs.Select{IDs: args[1:], Prefix: f.prefix, All: f.all}
	set := 0
	for _, b := range []bool{len(sel.IDs) > 0, sel.Prefix != "", sel.All} {
		if b {
			set++
		}
	}
	if set != 1 {
		return usageErr("give IDs, --prefix or --all (one of them)")
	}
	n, err := fn(ctx, args[0], sel)
	if err != nil {
		return err
	}
	if len(sel.IDs) == 0 {
		return o.done(n, n, verb, nil)
	}
	return o.done(n, len(sel.IDs), verb, nil)
}

// errNotAll is returned when some of the named jobs were not there.
func notAll(done, asked int, verb string) error {
	return fmt.Errorf("%w: %d of %d %s, the others were not found", natsjobs.ErrNotFound, done, asked, verb)
}
