//go:build !unix

package natsjobs

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
