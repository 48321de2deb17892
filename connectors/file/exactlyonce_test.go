package file

import (
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// A file is read exactly once (it is read again from the committed
// position); standard input is not.
func TestFileSourceDeclaresExactlyOnceForFilesOnly(t *testing.T) {
	var c connectors.ExactlyOnceSource = &SourceConnector{}
	if !c.ExactlyOnceSupport(map[string]string{FileKey: "/data/in.txt"}) {
		t.Error("a file: not supported")
	}
	if c.ExactlyOnceSupport(map[string]string{FileKey: " "}) || c.ExactlyOnceSupport(map[string]string{}) {
		t.Error("standard input: supported")
	}
}
