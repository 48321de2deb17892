package file_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/connectors/conformance"
	"github.com/sluice-io/sluice/connectors/file"
)

func TestSourceConformance(t *testing.T) {
	conformance.RunSource(t, conformance.SourceHarness{
		Plugin: file.SourcePlugin(),
		Config: func(t *testing.T) map[string]string {
			// The file does not exist yet: the task must wait for it.
			return map[string]string{"file": filepath.Join(t.TempDir(), "in.txt"), "topic": "lines"}
		},
		Produce: func(t *testing.T, cfg map[string]string, n int) {
			path := cfg["file"]
			old, err := os.ReadFile(path)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			next := bytes.Count(old, []byte("\n"))
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, "line-%d\n", next+i)
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(b.String()); err != nil {
				t.Fatal(err)
			}
		},
		Live: true,
		Identity: func(r *connectors.SourceRecord) (string, int64, error) {
			name, ok := r.Partition[file.FilenameField].(string)
			if !ok {
				return "", 0, fmt.Errorf("partition %v has no filename", r.Partition)
			}
			var n int64
			if _, err := fmt.Sscanf(r.Value.(string), "line-%d", &n); err != nil {
				return "", 0, fmt.Errorf("value %q: %w", r.Value, err)
			}
			return name, n, nil
		},
		BatchSizeKey: file.BatchSizeKey,
		BrokenTaskConfig: func(t *testing.T, valid map[string]string) map[string]string {
			valid["file"] = t.TempDir()
			return valid
		},
	})
}

func TestSinkConformance(t *testing.T) {
	conformance.RunSink(t, conformance.SinkHarness{
		Plugin: file.SinkPlugin(),
		Config: func(t *testing.T) map[string]string {
			return map[string]string{"file": filepath.Join(t.TempDir(), "out.txt")}
		},
		Record: func(i int) *connectors.SinkRecord {
			return &connectors.SinkRecord{ValueSchema: connectors.StringSchema, Value: fmt.Sprintf("record-%d", i)}
		},
		ReadBack: func(t *testing.T, cfg map[string]string) []int {
			b, err := os.ReadFile(cfg["file"])
			if os.IsNotExist(err) {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
			var out []int
			for _, line := range strings.SplitAfter(string(b), "\n") {
				if line == "" {
					continue
				}
				var i int
				if _, err := fmt.Sscanf(line, "record-%d\n", &i); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				out = append(out, i)
			}
			return out
		},
		BrokenTaskConfig: func(t *testing.T, valid map[string]string) map[string]string {
			valid["file"] = t.TempDir()
			return valid
		},
	})
}
