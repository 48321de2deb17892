package proctest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// tailLines is how much of a process's stderr a failure message shows.
const tailLines = 40

// Options are what a suite chooses for the processes it starts.
type Options struct {
	// ExitDeadline bounds how long Kill9, Terminate, WaitExit and Signal
	// wait for the process to exit; it must be set. Suites set it
	// generously: a slow, shared machine must not turn into a failed test.
	ExitDeadline time.Duration
	// Env is added (KEY=VALUE) to the environment the process inherits.
	Env []string
	// CombinedOutput sends stdout and stderr to one file, so that its tail
	// shows both in the order they were written; Stdout and Stderr then
	// name that file.
	CombinedOutput bool
	// LogTailOnFailure has the test log the tail of the process's stderr
	// when it failed.
	LogTailOnFailure bool
}

var procSeq atomic.Int64

// Proc is one running sluice child process. Its stdout and stderr go to
// files so that a failing test can show what the process said.
type Proc struct {
	Name   string
	Args   []string
	Stdout string // the file holding the process's stdout
	Stderr string // the file holding its stderr
	// Cmd is the started command: for a signal that does not end the
	// process (SIGSTOP) and for its ProcessState once it has exited.
	Cmd *exec.Cmd

	tb           testing.TB
	exitDeadline time.Duration
	done         chan struct{} // closed once the process has exited and been reaped
}

// Start starts bin with args, its output in files in a fresh tb.TempDir().
// The test's own SLUICE_* variables are not passed on: a developer's shell,
// or the settings of the test itself, must not change what the children
// run. The process is killed in tb.Cleanup, and if the test binary dies
// without running its cleanups, on Linux, by the kernel.
func Start(tb testing.TB, bin, name string, opts Options, args ...string) *Proc {
	tb.Helper()
	logDir := tb.TempDir()
	n := procSeq.Add(1)
	p := &Proc{
		Name:         name,
		Args:         args,
		Stdout:       filepath.Join(logDir, fmt.Sprintf("%s-%d.stdout", name, n)),
		Stderr:       filepath.Join(logDir, fmt.Sprintf("%s-%d.stderr", name, n)),
		tb:           tb,
		exitDeadline: opts.ExitDeadline,
		done:         make(chan struct{}),
	}
	if opts.CombinedOutput {
		p.Stdout = filepath.Join(logDir, fmt.Sprintf("%s-%d.log", name, n))
		p.Stderr = p.Stdout
	}
	outF, err := os.Create(p.Stdout)
	if err != nil {
		tb.Fatal(err)
	}
	errF := outF
	if !opts.CombinedOutput {
		if errF, err = os.Create(p.Stderr); err != nil {
			outF.Close()
			tb.Fatal(err)
		}
	}
	closeFiles := func() {
		outF.Close()
		if errF != outF {
			errF.Close()
		}
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, opts.Env...)
	cmd.Stdout, cmd.Stderr = outF, errF
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		closeFiles()
		tb.Fatalf("start %s: %v", name, err)
	}
	p.Cmd = cmd
	go func() {
		_ = cmd.Wait()
		closeFiles()
		close(p.done)
	}()
	// Cleanups run last-registered first: the kill below runs before the
	// tail is printed, so the tail is complete.
	if opts.LogTailOnFailure {
		tb.Cleanup(func() {
			if tb.Failed() {
				tb.Logf("--- %s (pid %d, %s) stderr, last lines:\n%s", name, cmd.Process.Pid, strings.Join(args, " "), Tail(p.Stderr, tailLines))
			}
		})
	}
	tb.Cleanup(func() {
		if !p.Exited() {
			_ = cmd.Process.Kill()
		}
		<-p.done
	})
	return p
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Exited reports whether the process has exited and been reaped.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// FailIfExited ends the test if the process died, showing why.
func (p *Proc) FailIfExited() {
	p.tb.Helper()
	if p.Exited() {
		p.tb.Fatalf("%s exited unexpectedly (%v); stderr tail:\n%s", p.Name, p.Cmd.ProcessState, Tail(p.Stderr, tailLines))
	}
}

// Kill9 sends SIGKILL and waits until the process is reaped.
func (p *Proc) Kill9() {
	p.tb.Helper()
	if err := p.Cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.tb.Fatalf("kill -9 %s: %v", p.Name, err)
	}
	p.WaitExit()
}

// Terminate sends SIGTERM and returns the exit code once the process exits.
// A process that is already gone fails the test: it did not stop because
// it was asked to.
func (p *Proc) Terminate() int {
	p.tb.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.tb.Fatalf("SIGTERM %s: %v", p.Name, err)
	}
	p.WaitExit()
	return p.Cmd.ProcessState.ExitCode()
}

// WaitExit waits until the process has exited and been reaped.
func (p *Proc) WaitExit() {
	p.tb.Helper()
	if err := p.wait(); err != nil {
		p.tb.Fatal(err)
	}
}

// Signal sends sig and waits until the process is reaped, like Kill9, but
// returns what went wrong instead of ending the test: the caller may have
// to undo something first (the chaos run resumes a stopped broker).
func (p *Proc) Signal(sig os.Signal) error {
	if err := p.Cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%v to %s: %w", sig, p.Name, err)
	}
	return p.wait()
}

func (p *Proc) wait() error {
	select {
	case <-p.done:
		return nil
	case <-time.After(p.exitDeadline):
		return fmt.Errorf("%s did not exit within %v; stderr tail:\n%s", p.Name, p.exitDeadline, Tail(p.Stderr, tailLines))
	}
}

// StderrText is everything the process has written to stderr so far.
func (p *Proc) StderrText() string {
	b, err := os.ReadFile(p.Stderr)
	if err != nil {
		p.tb.Fatal(err)
	}
	return string(b)
}
