package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// dataset is the input of one size of the throughput scenarios: a file of
// lines for FileStreamSource, the same lines split over four files for
// the parallel scenario, and the same lines as records in a topic for
// FileStreamSink, which must write the file back byte for byte.
type dataset struct {
	name      string
	lines     int
	file      string   // every line, for FileStreamSource
	parts     []string // the lines dealt over the parallel connectors' files
	partLines int      // lines in each part
	sinkTopic string   // every line as a record, for FileStreamSink
	size      int64    // bytes of file
}

// makeLine fills buf (lineBytes long, newline included) with line i: its
// number, then letters, so that every line differs and a reordering or a
// loss shows in the sink's output.
func makeLine(buf []byte, i int) {
	n := copy(buf, fmt.Sprintf("%09d ", i))
	for j := n; j < len(buf)-1; j++ {
		buf[j] = 'a' + byte((i+j)%26)
	}
	buf[len(buf)-1] = '\n'
}

// makeDataset writes the files and fills the sink's input topic.
func makeDataset(ctx context.Context, b *broker, dir, name string, lines, lineBytes, parts int) (*dataset, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d := &dataset{name: name, lines: lines, file: filepath.Join(dir, name+".txt"),
		partLines: lines / parts, sinkTopic: "bench-sink-input-" + name, size: int64(lines) * int64(lineBytes)}
	all, err := os.Create(d.file)
	if err != nil {
		return nil, err
	}
	defer all.Close()
	w := bufio.NewWriterSize(all, 1<<20)
	partFiles := make([]*bufio.Writer, parts)
	for p := range parts {
		path := filepath.Join(dir, fmt.Sprintf("%s-part%d.txt", name, p))
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		d.parts = append(d.parts, path)
		partFiles[p] = bufio.NewWriterSize(f, 1<<20)
	}
	values := make([][]byte, 0, lines)
	for i := range lines {
		line := make([]byte, lineBytes)
		makeLine(line, i)
		w.Write(line)
		if p := i / max(d.partLines, 1); p < parts && d.partLines > 0 {
			partFiles[p].Write(line)
		}
		values = append(values, line[:lineBytes-1])
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	for _, pw := range partFiles {
		if err := pw.Flush(); err != nil {
			return nil, err
		}
	}
	if err := b.CreateTopic(ctx, d.sinkTopic, 1); err != nil {
		return nil, err
	}
	if err := b.produceLines(ctx, d.sinkTopic, values); err != nil {
		return nil, err
	}
	if n, err := b.records(ctx, d.sinkTopic); err != nil || n != int64(lines) {
		return nil, fmt.Errorf("the sink's input topic %s holds %d records, want %d (%v)", d.sinkTopic, n, lines, err)
	}
	return d, nil
}

// sameFile reports whether two files hold the same bytes.
func sameFile(a, b string) (bool, error) {
	x, err := os.ReadFile(a)
	if err != nil {
		return false, err
	}
	y, err := os.ReadFile(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(x, y), nil
}
