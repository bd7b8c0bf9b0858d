package jobs

import (
	"context"
	"log/slog"
)

// LogRuns returns an OnFinish hook that writes one record to logger for
// each finished attempt; nothing is logged unless it is installed:
//
//	s, err := jobs.New(jobs.Options{Hooks: jobs.Hooks{OnFinish: jobs.LogRuns(logger)}})
//
// The message is "jobs: run", with the attributes id, name (when the job
// has one), attempt, outcome, scheduled (the due time), lateness,
// duration, and error when the attempt failed. The level follows the
// outcome: Info for Succeeded and Canceled, Warn for Retrying, Error for
// Failed. A nil logger means slog.Default(), read at each record. To log
// and do more in OnFinish, call the returned func from your own hook.
func LogRuns(logger *slog.Logger) func(Event) {
	return func(e Event) {
		l := logger
		if l == nil {
			l = slog.Default()
		}
		level := slog.LevelInfo
		switch e.Outcome {
		case Retrying:
			level = slog.LevelWarn
		case Failed:
			level = slog.LevelError
		}
		ctx := context.Background()
		if !l.Enabled(ctx, level) {
			return
		}
		attrs := make([]slog.Attr, 0, 8)
		attrs = append(attrs, slog.String("id", e.ID))
		if e.Name != "" {
			attrs = append(attrs, slog.String("name", e.Name))
		}
		attrs = append(attrs,
			slog.Int("attempt", e.Attempt),
			slog.String("outcome", e.Outcome.String()),
			slog.Time("scheduled", e.Scheduled),
			slog.Duration("lateness", e.Lateness),
			slog.Duration("duration", e.Duration))
		if e.Err != nil {
			attrs = append(attrs, slog.String("error", e.Err.Error()))
		}
		l.LogAttrs(ctx, level, "jobs: run", attrs...)
	}
}
