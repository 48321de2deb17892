// Package benchproc is what the side-by-side benchmark harnesses
// (bench/connect, bench/debezium) need of the processes they start and of
// the machine: a child process with its output in a log file, in a
// process group of its own; its CPU time and resident set from /proc; a
// free loopback port; the load average.
package benchproc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ClockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat.
// It is 100 on every Linux architecture Go runs on (the kernel's ABI
// fixes it, whatever CONFIG_HZ is).
const ClockTicks = 100

// Process is one process a harness started. Its combined output goes to a
// log file in the run's directory, so that a failure can be read after
// the run.
type Process struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string
	Started time.Time
	exited  chan struct{}
	waitErr error
}

// Options are how a process starts besides its command line.
type Options struct {
	Env        []string            // added to the harness's environment
	Credential *syscall.Credential // the user it runs as (nil: the harness's)
}

// Start starts argv with its output in logPath.
func Start(name, logPath string, o Options, argv ...string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), o.Env...)
	// Its own process group, so that Ctrl-C on the harness reaches only
	// the harness, which then stops its children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: o.Credential}
	p := &Process{Name: name, Cmd: cmd, LogPath: logPath, exited: make(chan struct{})}
	p.Started = time.Now()
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

func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Alive returns an error, with the end of the log, once the process has
// exited.
func (p *Process) Alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); the end of its log %s:\n%s", p.Name, p.waitErr, p.LogPath, TailFile(p.LogPath, 30))
	default:
		return nil
	}
}

// Stop sends SIGTERM and waits up to grace for the exit, then SIGKILLs.
func (p *Process) Stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.exited
	}
}

// Kill sends SIGKILL and returns when it was sent; it waits for the exit
// after that.
func (p *Process) Kill() (time.Time, error) {
	if err := p.Cmd.Process.Kill(); err != nil {
		return time.Time{}, err
	}
	sent := time.Now()
	<-p.exited
	return sent, nil
}

// CPUTicks is a process's user plus system CPU time in clock ticks.
func CPUTicks(pid int) (int64, error) {
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

// RSSBytes is a process's resident set (VmRSS).
func RSSBytes(pid int) (int64, error) {
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

// FreePort returns a loopback port that nothing listened on a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// TailFile returns the last n lines of a file, for error messages.
func TailFile(path string, n int) string {
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

// LoadAverage is the first field of /proc/loadavg: the machine's 1-minute
// load average.
func LoadAverage() (float64, error) {
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

// StartKafka starts the integration suite's Apache Kafka node
// (test/kafka/kafka.sh under repo) on a free loopback port with its data in
// dir, and returns its bootstrap address once it answers. ctx ends the
// script (not the node, which StopKafka stops).
func StartKafka(ctx context.Context, repo, dir string, props ...string) (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repo, "test/kafka/kafka.sh"), "start", strconv.Itoa(port), dir)
	if len(props) > 0 {
		cmd.Env = append(os.Environ(), "SLUICE_KAFKA_PROPERTIES="+strings.Join(props, "\n"))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("test/kafka/kafka.sh start: %w", err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

// StopKafka stops the node StartKafka started in dir.
func StopKafka(repo, dir string) {
	cmd := exec.Command("bash", filepath.Join(repo, "test/kafka/kafka.sh"), "stop", dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	_ = cmd.Run()
}
