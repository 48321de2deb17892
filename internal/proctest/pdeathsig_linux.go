package proctest

import (
	"os/exec"
	"syscall"
)

// setPdeathsig has the kernel kill a child if the test binary dies without
// running its cleanups (a panic or `go test -timeout`), so that no sluice
// process outlives the test holding ports (or, in the failover benchmark,
// producing).
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
