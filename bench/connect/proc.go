package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat.
// It is 100 on every Linux architecture Go runs on (the kernel's ABI
// fixes it, whatever CONFIG_HZ is).
const clockTicks = 100

// proc is one process the harness started: a worker or the broker's
// helper script. Its combined output goes to a log file in the run's
// directory, so that a failure can be read after the run.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	started time.Time
	exited  chan struct{}
	waitErr error
}

// startProc starts argv with its output in logPath and the extra
// environment env.
func startProc(name, logPath string, env []string, argv ...string) (*proc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	// Its own process group, so that Ctrl-C on the harness reaches only
	// the harness, which then stops its children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// alive returns an error, with the end of the log, once the process has
// exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); the end of its log %s:\n%s", p.name, p.waitErr, p.logPath, tailFile(p.logPath, 30))
	default:
		return nil
	}
}

// stop sends SIGTERM and waits up to grace for the exit, then SIGKILLs.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// kill sends SIGKILL and returns when it was sent, the moment failover
// is timed from; it waits for the exit after that.
func (p *proc) kill() (time.Time, error) {
	if err := p.cmd.Process.Kill(); err != nil {
		return time.Time{}, err
	}
	sent := time.Now()
	<-p.exited
	return sent, nil
}

// cpuTicks is the process's user plus system CPU time in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis are fixed: utime and stime are the 12th and 13th.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')' in %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return utime + stime, nil
}

// rssBytes is the process's resident set (VmRSS).
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: VmRSS %q", pid, v)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// cpuMeter measures one process's CPU seconds between start and end.
type cpuMeter struct {
	pid   int
	ticks int64
}

func startCPU(pid int) (cpuMeter, error) {
	t, err := cpuTicks(pid)
	return cpuMeter{pid: pid, ticks: t}, err
}

// seconds is the CPU time used since startCPU.
func (m cpuMeter) seconds() (float64, error) {
	t, err := cpuTicks(m.pid)
	if err != nil {
		return 0, err
	}
	return float64(t-m.ticks) / clockTicks, nil
}

// freePort returns a loopback port that nothing listened on a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tailFile returns the last n lines of a file, for error messages.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
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
			if v, err := loadAverage(); err == nil {
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

// loadAverage is the first field of /proc/loadavg.
func loadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg is empty")
	}
	return strconv.ParseFloat(f[0], 64)
}
