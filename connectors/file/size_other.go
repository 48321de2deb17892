//go:build !unix

package file

import "os"

// fileSizer reads an open file's size (size_unix.go does it without
// allocating).
type fileSizer struct{}

func (fileSizer) size(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
