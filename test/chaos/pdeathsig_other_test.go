//go:build !linux

package chaos

import "os/exec"

// setPdeathsig is Linux-only; elsewhere t.Cleanup alone kills the children.
func setPdeathsig(*exec.Cmd) {}
