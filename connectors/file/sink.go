package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
)

// flushBytes bounds what a sink task buffers within one batch before it
// writes, so that memory stays bounded whatever the batch size.
const flushBytes = 1 << 20

// SinkTask is FileStreamSinkTask: it appends each record's value and a
// newline to a file (or stdout).
//
// Write hands each batch to the file before it returns, as Connect's
// FileStreamSinkTask prints each record at once: kept in the buffer until
// the next offset commit, the last lines of a run reached the file up to
// offset.flush.interval.ms late. The buffer is written with one write call
// per flush, always ending on a line end, and the file is opened with
// O_APPEND: several tasks appending to one file never interleave lines.
//
// Offsets are committed only for lines an fsync made durable (invariant 1),
// but the fsync runs in the background: PreCommit starts one covering what
// was written so far and returns the offsets the previous, completed one
// covered, so the commit lags one offset.flush.interval.ms behind the
// file. An fsync of an appended file takes a journal commit, 20-40 ms on
// the benchmark's disk whatever the amount of data: done in line, every
// commit stopped the task for that long, a third of a run's time at 100 ms
// commits. A PreCommit with nothing written since the last fsync began
// waits for it and returns every offset it was given: the runtime's last
// commit before its partitions leave the task asks twice, so that their
// next owner does not write the last interval again.
type SinkTask struct {
	log   zerolog.Logger
	path  string
	f     *os.File
	owned bool // false for stdout, which the task must not close
	buf   []byte
	// failed sticks once a write or an fsync failed: lines may be lost,
	// so no later offset may be committed by this task (invariant 1). The
	// runtime restarts it and redelivers from the last committed offsets.
	failed error
	// syncing is the fsync under way, nil when none is.
	syncing *fileSync
	// dirty says lines were written to the file since the last fsync
	// began.
	dirty bool
	// durable holds, per partition, the offset up to which a completed
	// fsync made the lines durable.
	durable map[connectors.TopicPartition]int64
}

// fileSync is one fsync run in the background, and the offsets it makes
// safe to commit once it succeeds.
type fileSync struct {
	offsets map[connectors.TopicPartition]int64
	done    chan struct{}
	err     error // set before done is closed
}

func (t *SinkTask) Open(_ context.Context, tc connectors.SinkTaskContext, config map[string]string) error {
	cfg, err := SinkConfigDef().Parse(config)
	if err != nil {
		return err
	}
	if l := tc.Logger(); l != nil {
		t.log = l.With().Str("connector_class", "FileStreamSink").Logger()
	} else {
		t.log = zerolog.Nop()
	}
	t.path = cfg.String(FileKey)
	if t.path == "" {
		t.f = os.Stdout
		return nil
	}
	f, err := os.OpenFile(t.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return sinkPathError("cannot open", t.path, err)
	}
	t.f, t.owned = f, true
	t.buf = make([]byte, 0, 64<<10)
	return nil
}

func sinkPathError(what, path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("file sink: %s %s: %w", what, path, err)
}

func (t *SinkTask) name() string {
	if t.path == "" {
		return "stdout"
	}
	return t.path
}

func (t *SinkTask) Write(_ context.Context, records []*connectors.SinkRecord) error {
	if t.f == nil {
		return errors.New("file sink: write before open or after close")
	}
	if s := t.syncing; s != nil {
		select {
		case <-s.done:
			// A failed fsync stops the task now rather than at the next
			// commit.
			if err := t.awaitSync(); err != nil {
				return err
			}
		default:
		}
	}
	if t.failed != nil {
		return t.failed
	}
	for _, r := range records {
		t.buf = AppendValue(t.buf, r.Value, r.ValueSchema)
		t.buf = append(t.buf, '\n')
		if len(t.buf) >= flushBytes {
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	return t.flush()
}

// BorrowsRecords reports that Write keeps nothing of its records: each
// value is appended to the task's buffer as text before Write returns
// (connectors.RecordBorrower).
func (t *SinkTask) BorrowsRecords() bool { return true }

func (t *SinkTask) flush() error {
	if t.failed != nil {
		return t.failed
	}
	if len(t.buf) == 0 {
		return nil
	}
	_, err := t.f.Write(t.buf)
	t.buf = t.buf[:0]
	t.dirty = true
	if err != nil {
		t.failed = sinkPathError("cannot write to", t.name(), err)
		return t.failed
	}
	return nil
}

func (t *SinkTask) sync() error {
	if !t.owned {
		// stdout may be a pipe or a terminal, which cannot be synced.
		return nil
	}
	if err := t.f.Sync(); err != nil {
		t.failed = sinkPathError("cannot sync", t.name(), err)
		return t.failed
	}
	t.dirty = false
	return nil
}

// startSync fsyncs the file in the background; once it succeeds, offsets,
// whose lines are all in the file already, are durable.
func (t *SinkTask) startSync(offsets map[connectors.TopicPartition]int64) {
	s := &fileSync{offsets: maps.Clone(offsets), done: make(chan struct{})}
	t.syncing, t.dirty = s, false
	f := t.f
	go func() {
		s.err = f.Sync()
		close(s.done)
	}()
}

// awaitSync waits for the fsync under way, if any, and records what it
// made durable.
func (t *SinkTask) awaitSync() error {
	s := t.syncing
	if s == nil {
		return t.failed
	}
	<-s.done
	t.syncing = nil
	if s.err != nil {
		if t.failed == nil {
			t.failed = sinkPathError("cannot sync", t.name(), s.err)
		}
		return t.failed
	}
	if t.durable == nil {
		t.durable = map[connectors.TopicPartition]int64{}
	}
	for tp, off := range s.offsets {
		t.durable[tp] = max(t.durable[tp], off)
	}
	return t.failed
}

// Assigned is part of connectors.PartitionAware; nothing to do.
func (t *SinkTask) Assigned(context.Context, []connectors.TopicPartition) error { return nil }

// Revoked forgets what the task knows synced of partitions that leave it:
// their offsets are committed by now, and the group's offset may move past
// them under their next owner, so a stale durable offset returned if they
// came back would move the group's offset back.
func (t *SinkTask) Revoked(_ context.Context, partitions []connectors.TopicPartition) error {
	for _, tp := range partitions {
		delete(t.durable, tp)
		if t.syncing != nil {
			// The fsync's goroutine never reads offsets; awaitSync
			// does, and the runtime calls the task one call at a time.
			delete(t.syncing.offsets, tp)
		}
	}
	return nil
}

// PreCommit writes out the buffer, and returns the offsets whose lines a
// completed fsync made durable (invariant 1): if lines were written since
// the last fsync began, it starts another that covers offsets and returns
// what the previous ones covered; if none were, everything is durable once
// the fsync under way ends, and it returns offsets whole.
func (t *SinkTask) PreCommit(_ context.Context, offsets map[connectors.TopicPartition]int64) (map[connectors.TopicPartition]int64, error) {
	if t.f == nil {
		return nil, errors.New("file sink: pre-commit before open or after close")
	}
	if err := t.flush(); err != nil {
		return nil, err
	}
	if err := t.awaitSync(); err != nil {
		return nil, err
	}
	if !t.owned || !t.dirty {
		// stdout cannot be synced: written is as durable as it gets.
		return offsets, nil
	}
	safe := make(map[connectors.TopicPartition]int64, len(offsets))
	for tp, off := range offsets {
		if d, ok := t.durable[tp]; ok {
			// A partition read again from an earlier offset (a
			// rebalance) has its earlier lines durable already.
			safe[tp] = min(d, off)
		}
	}
	t.startSync(offsets)
	return safe, nil
}

func (t *SinkTask) Close() error {
	if t.f == nil {
		return nil
	}
	err := t.flush()
	if serr := t.awaitSync(); err == nil {
		err = serr
	}
	if t.owned {
		if err == nil {
			err = t.sync()
		}
		if cerr := t.f.Close(); cerr != nil && err == nil {
			err = sinkPathError("cannot close", t.name(), cerr)
		}
	}
	t.f = nil
	t.buf = nil
	return err
}

// AppendValue renders a record value as FileStreamSink writes it: strings
// and bytes as they are, nil as "null" (Java's String.valueOf), numbers and
// booleans as text, and structs, maps and arrays as JSON.
func AppendValue(b []byte, v any, schema *connectors.Schema) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return append(b, x...)
	case []byte:
		return append(b, x...)
	case bool:
		return strconv.AppendBool(b, x)
	case int8:
		return strconv.AppendInt(b, int64(x), 10)
	case int16:
		return strconv.AppendInt(b, int64(x), 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case float32:
		return strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case time.Time:
		return x.AppendFormat(b, time.RFC3339Nano)
	case *big.Rat:
		return appendRat(b, x, schema)
	case *connectors.StructValue, map[string]any, []any:
		return appendJSON(b, v, schema)
	default:
		return fmt.Append(b, v)
	}
}

func appendRat(b []byte, r *big.Rat, schema *connectors.Schema) []byte {
	if schema != nil {
		if s, err := strconv.Atoi(schema.Parameters["scale"]); err == nil && s >= 0 {
			return append(b, r.FloatString(s)...)
		}
	}
	return append(b, r.RatString()...)
}

func appendJSON(b []byte, v any, schema *connectors.Schema) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case *connectors.StructValue:
		if x == nil {
			return append(b, "null"...)
		}
		b = append(b, '{')
		for i, f := range x.Schema.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f.Name)
			b = append(b, ':')
			var fv any
			if i < len(x.Values) {
				fv = x.Values[i]
			}
			b = appendJSON(b, fv, f.Schema)
		}
		return append(b, '}')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var vs *connectors.Schema
		if schema != nil {
			vs = schema.Values
		}
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSON(b, x[k], vs)
		}
		return append(b, '}')
	case []any:
		var is *connectors.Schema
		if schema != nil {
			is = schema.Items
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e, is)
		}
		return append(b, ']')
	case string:
		return appendJSONString(b, x)
	case bool, int8, int16, int32, int64, int, float32, float64:
		return AppendValue(b, x, schema)
	case *big.Rat:
		return appendRat(b, x, schema)
	default:
		// []byte becomes base64 and time.Time RFC 3339, as in JSON elsewhere.
		j, err := json.Marshal(x)
		if err != nil {
			return appendJSONString(b, fmt.Sprint(x))
		}
		return append(b, j...)
	}
}

func appendJSONString(b []byte, s string) []byte {
	j, _ := json.Marshal(s)
	return append(b, j...)
}
