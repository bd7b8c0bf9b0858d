package compat

import (
	"io"
	"os"
	"testing"

	"github.com/zeromicro/go-zero/core/logx"
)

// TestMain sends go-zero's global logger to io.Discard: its caches log
// stats every minute of bubble time, and its wheel logs recovered panics.
// TestDiff_CacheStatsLoggedInGoZero swaps in a buffer of its own.
func TestMain(m *testing.M) {
	logx.SetWriter(logx.NewWriter(io.Discard))
	os.Exit(m.Run())
}
