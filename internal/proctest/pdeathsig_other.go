//go:build !linux

package proctest

import "os/exec"

// setPdeathsig is Linux-only; elsewhere the cleanups alone kill the children.
func setPdeathsig(*exec.Cmd) {}
