//go:build !linux

package test

import "os/exec"

// setPdeathsig is Linux-only; elsewhere t.Cleanup alone kills the children.
func setPdeathsig(*exec.Cmd) {}
