package durable

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// On a shared machine a system's rate depends on the CPU share its
// processes get: a client beside a server process of its own runs as two
// processes, an embedded server as one. cpu-us/job is the CPU that the
// work cost, whoever ran it: this process (client, and natsjobs' embedded
// server) plus the server's process group (redis-server, every PostgreSQL
// backend, the external nats-server), over the timed region, per job.

// A cpuMeter is the CPU used so far by this process and a server's group.
type cpuMeter struct {
	pgid       int // the server's process group; 0 when it runs in this process
	self, srv  time.Duration
	selfOK, ok bool
}

func startCPU(e *env) cpuMeter {
	m := cpuMeter{}
	if e.srv != nil && e.srv.cmd != nil && e.srv.cmd.Process != nil {
		m.pgid = e.srv.cmd.Process.Pid // started with Setpgid
	}
	m.self, m.selfOK = selfCPU()
	m.srv, m.ok = groupCPU(m.pgid)
	return m
}

// perJob returns the CPU microseconds per job since m was taken, and false
// when a clock could not be read.
func (m cpuMeter) perJob(n int) (float64, bool) {
	self, ok1 := selfCPU()
	srv, ok2 := groupCPU(m.pgid)
	if !m.selfOK || !m.ok || !ok1 || !ok2 || n <= 0 {
		return 0, false
	}
	return float64((self-m.self)+(srv-m.srv)) / float64(time.Microsecond) / float64(n), true
}

// addCPU adds cpu-us/job to metrics, if it could be measured.
func addCPU(metrics map[string]float64, m cpuMeter, n int) map[string]float64 {
	if us, ok := m.perJob(n); ok {
		metrics["cpu-us/job"] = us
	}
	return metrics
}

func selfCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// groupCPU sums the CPU time of the live processes in process group pgid,
// with that of their children already waited for (a PostgreSQL backend's
// time moves to the postmaster when it exits). pgid 0 is nothing.
func groupCPU(pgid int) (time.Duration, bool) {
	if pgid == 0 {
		return 0, true
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	var sum time.Duration
	for _, de := range ents {
		if _, err := strconv.Atoi(de.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + de.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ... utime stime cutime cstime: the
		// command may hold spaces and parentheses, the fields after the
		// last ')' do not.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 15 {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g != pgid {
			continue
		}
		for _, k := range f[11:15] {
			t, _ := strconv.ParseInt(k, 10, 64)
			sum += time.Duration(t) * clockTick
		}
	}
	return sum, true
}
