package main

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sluice-io/sluice/bench/internal/benchproc"
)

// proc is one process the harness started: a worker or the broker's
// helper script.
type proc = benchproc.Process

// startProc starts argv with its output in logPath and the extra
// environment env.
func startProc(name, logPath string, env []string, argv ...string) (*proc, error) {
	return benchproc.Start(name, logPath, benchproc.Options{Env: env}, argv...)
}

// cpuMeter measures one process's CPU seconds between start and end.
type cpuMeter struct {
	pid   int
	ticks int64
}

func startCPU(pid int) (cpuMeter, error) {
	t, err := benchproc.CPUTicks(pid)
	return cpuMeter{pid: pid, ticks: t}, err
}

// seconds is the CPU time used since startCPU.
func (m cpuMeter) seconds() (float64, error) {
	t, err := benchproc.CPUTicks(m.pid)
	if err != nil {
		return 0, err
	}
	return float64(t-m.ticks) / benchproc.ClockTicks, nil
}

// loadMeter samples the machine's 1-minute load average every 5 s for
// the results README: how busy the machine was says how far to trust
// the figures, and a run cannot tell what else ran otherwise.
type loadMeter struct {
	mu      sync.Mutex
	samples []float64
	stop    chan struct{}
}

func startLoadMeter() *loadMeter {
	m := &loadMeter{stop: make(chan struct{})}
	go func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			if v, err := benchproc.LoadAverage(); err == nil {
				m.mu.Lock()
				m.samples = append(m.samples, v)
				m.mu.Unlock()
			}
			select {
			case <-m.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

func (m *loadMeter) close() { close(m.stop) }

// summary is "min X, median Y, max Z (N samples)", or "" without samples.
func (m *loadMeter) summary() string {
	m.mu.Lock()
	s := slices.Clone(m.samples)
	m.mu.Unlock()
	if len(s) == 0 {
		return ""
	}
	slices.Sort(s)
	return fmt.Sprintf("min %.1f, median %.1f, max %.1f (%d samples, every 5 s)", s[0], s[len(s)/2], s[len(s)-1], len(s))
}
