//go:build unix

package file

import (
	"os"
	"syscall"
)

// fileSizer reads an open file's size with one fstat and no allocation. An
// idle task asks once a second; os.File.Stat allocated a FileInfo each time.
type fileSizer struct {
	raw   syscall.RawConn
	stat  syscall.Stat_t
	err   error
	fstat func(fd uintptr) // bound once: a closure made per call would allocate
}

func (s *fileSizer) size(f *os.File) (int64, error) {
	if s.raw == nil {
		raw, err := f.SyscallConn()
		if err != nil {
			return 0, err
		}
		s.raw = raw
		s.fstat = func(fd uintptr) { s.err = syscall.Fstat(int(fd), &s.stat) }
	}
	if err := s.raw.Control(s.fstat); err != nil {
		return 0, err
	}
	return s.stat.Size, s.err
}
