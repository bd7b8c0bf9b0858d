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
// server) plus the server's processes (redis-server, every PostgreSQL
// backend, the external nats-server: the server process and its
// descendants), over the timed region, per job.

// A cpuMeter is the CPU used so far by this process and a server's
// processes.
type cpuMeter struct {
	root       int // the server's process; 0 when it runs in this process
	self, srv  time.Duration
	selfOK, ok bool
}

func startCPU(e *env) cpuMeter {
	m := cpuMeter{}
	if e.srv != nil && e.srv.cmd != nil && e.srv.cmd.Process != nil {
		m.root = e.srv.cmd.Process.Pid
	}
	m.self, m.selfOK = selfCPU()
	m.srv, m.ok = treeCPU(m.root)
	return m
}

// perJob returns the CPU microseconds per job since m was taken, and false
// when a clock could not be read.
func (m cpuMeter) perJob(n int) (float64, bool) {
	self, ok1 := selfCPU()
	srv, ok2 := treeCPU(m.root)
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

// A proc is one process's line of /proc/<pid>/stat.
type proc struct {
	pid, ppid int
	cpu       time.Duration // utime + stime + cutime + cstime
}

// processTree returns the live process root and all its descendants.
// Descendants rather than root's process group: every PostgreSQL child
// process (backends, checkpointer, walwriter) makes itself a process group
// leader, so a group held the postmaster alone and missed the backends'
// CPU and memory.
func processTree(root int) []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil || root == 0 {
		return nil
	}
	children := map[int][]proc{}
	var top *proc
	for _, de := range ents {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
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
		p := proc{pid: pid}
		p.ppid, _ = strconv.Atoi(f[1])
		for _, k := range f[11:15] {
			t, _ := strconv.ParseInt(k, 10, 64)
			p.cpu += time.Duration(t) * clockTick
		}
		if pid == root {
			top = &p
		}
		children[p.ppid] = append(children[p.ppid], p)
	}
	if top == nil {
		return nil
	}
	tree := []proc{*top}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i].pid]...)
	}
	return tree
}

// treeCPU sums the CPU time of process root and its live descendants,
// with that of their children already waited for (a PostgreSQL backend's
// time moves to the postmaster when it exits). root 0 is nothing; a root
// that is gone is an error.
func treeCPU(root int) (time.Duration, bool) {
	if root == 0 {
		return 0, true
	}
	tree := processTree(root)
	var sum time.Duration
	for _, p := range tree {
		sum += p.cpu
	}
	return sum, len(tree) > 0
}
