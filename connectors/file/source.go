package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/strbox"
)

const (
	// readSize is the smallest read the task issues: few syscalls per batch.
	readSize = 64 << 10
	// maxLineBytes bounds the pending buffer. Connect grows it without
	// limit; a file without line breaks would then take the worker's memory.
	maxLineBytes = 64 << 20
	// tailInterval is how soon a task that just reached the end of its
	// file looks for more; each look that finds nothing doubles the wait,
	// up to maxTailInterval, the second Connect's FileStreamSourceTask
	// waits after every read that found nothing. A file being written to
	// is followed closely, and an idle one costs one look a second, as in
	// Connect, rather than twenty.
	tailInterval    = 50 * time.Millisecond
	maxTailInterval = time.Second
	// missingInterval is how often the task looks for a file not created
	// yet: every second, as Connect's task, which waits one second after
	// each attempt to open it.
	missingInterval = time.Second
	// defaultPollWait bounds a Poll whose ctx has no deadline.
	defaultPollWait = time.Second
)

// SourceTask is FileStreamSourceTask: it tails one file (or stdin) and emits
// one record per line.
type SourceTask struct {
	// log is the task context's logger, shared: each line adds
	// connector_class itself (logEvent), where a child logger would hold a
	// 500-byte context buffer of its own for every task, idle or not.
	log       *zerolog.Logger
	path      string // empty: stdin
	topic     string
	batchSize int
	// lent is the memory of the last Poll's records, which the runtime
	// is done with at the next Poll (LendsRecords).
	lent      lentLines
	partition map[string]any

	// stdin is what an empty path reads; tests replace it.
	stdin io.Reader

	file    *os.File     // open regular file, read directly
	sizer   fileSizer    // the file's size, looked at while the task is idle
	stream  *asyncReader // stdin or a non-regular file: reads block
	waiting bool         // the file does not exist yet
	warned  bool
	startAt int64 // committed position, applied when the file opens

	// buf holds the pending bytes, buf[start:end]. A file's is allocated
	// only once the file holds bytes past pos, and released once the task
	// has been idle for maxTailInterval with nothing pending: an idle task
	// holds no read buffer (2*readSize bytes each), and allocates one
	// again only when its file has grown (released, also set when the
	// file is opened).
	buf        []byte
	start, end int
	released   bool
	tailWait   time.Duration // the next wait at the end of the file
	nextLook   time.Time     // when the task reads again; zero: now
	lookSlack  time.Duration // how far from nextLook a look may move to save a wake-up (Poll)
	timer      *time.Timer   // sleep's, reused from Poll to Poll
	// returnsWhenIdle: the task told the runtime that its Poll returns at
	// once when it has nothing (ReturnsWhenIdle), and the runtime naps
	// until the Poll's deadline instead of the task sleeping.
	returnsWhenIdle bool
	scanned         int   // bytes of the pending data known to hold no complete line end
	pos             int64 // file position of buf[start]
	// stdinOffset is the offset of every line read from standard input.
	stdinOffset map[string]any
	// text is the pending bytes of one poll as a string, from file
	// position textPos: a poll's lines are substrings of it, one string
	// conversion for many lines rather than one each. It is dropped at the
	// end of each poll (readBatch); the records of a poll keep it until
	// they are written over, or until a poll finds nothing (dropLines), so
	// an idle task holds none.
	text    string
	textPos int64
	err     error // a read error to report once the records before it are out
	closed  bool
}

func (t *SourceTask) Open(_ context.Context, tc connectors.SourceTaskContext, config map[string]string) error {
	cfg, err := SourceConfigDef().Parse(config)
	if err != nil {
		return err
	}
	if l := tc.Logger(); l != nil {
		t.log = l
	} else {
		t.log = &nopLogger
	}
	t.path = cfg.String(FileKey)
	t.topic = cfg.String(TopicKey)
	t.batchSize = cfg.Int(BatchSizeKey)
	t.tailWait = tailInterval

	if t.path == "" {
		// As in Connect, stdin has no offsets: a new process has a new stdin.
		t.partition = map[string]any{FilenameField: nil}
		in := t.stdin
		if in == nil {
			in = os.Stdin
		}
		t.stream = newAsyncReader(in, nil)
		return nil
	}
	t.partition = map[string]any{FilenameField: t.path}
	off, err := tc.Offset(t.partition)
	if err != nil {
		return fmt.Errorf("file source: reading the committed offset of %s: %w", t.path, err)
	}
	if off != nil {
		if t.startAt, err = position(off[PositionField]); err != nil {
			return fmt.Errorf("file source: committed offset of %s: %w", t.path, err)
		}
	}
	opened, err := t.openFile()
	if err != nil {
		return err
	}
	if !opened {
		t.waiting = true
	}
	return nil
}

// position accepts the number types an offset can have after a trip through
// JSON or through an in-memory store.
func position(v any) (int64, error) {
	switch p := v.(type) {
	case nil:
		return 0, nil
	case int64:
		return nonNegative(p)
	case int:
		return nonNegative(int64(p))
	case int32:
		return nonNegative(int64(p))
	case float64:
		if p != math.Trunc(p) || p > math.MaxInt64 {
			return 0, fmt.Errorf("position %v is not an integer", p)
		}
		return nonNegative(int64(p))
	case json.Number:
		n, err := p.Int64()
		if err != nil {
			return 0, fmt.Errorf("position %q is not an integer", p)
		}
		return nonNegative(n)
	default:
		return 0, fmt.Errorf("position has the incorrect type %T", v)
	}
}

func nonNegative(n int64) (int64, error) {
	if n < 0 {
		return 0, fmt.Errorf("position %d is negative", n)
	}
	return n, nil
}

// openFile opens the configured path. It reports false, and no error, when
// the file does not exist yet: Connect's task waits for it, and so does this.
func (t *SourceTask) openFile() (bool, error) {
	// O_NONBLOCK keeps opening a FIFO without a writer from hanging; it
	// changes nothing for regular files.
	f, err := os.OpenFile(t.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if !t.warned {
			t.warned = true
			t.logEvent(t.log.Warn()).Str("file", t.path).Msg("file does not exist yet; waiting for it to be created")
		}
		return false, nil
	}
	if err != nil {
		return false, pathError("cannot open", t.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return false, pathError("cannot stat", t.path, err)
	}
	if st.IsDir() {
		f.Close()
		return false, fmt.Errorf("file source: cannot read %s: it is a directory", t.path)
	}
	if !st.Mode().IsRegular() {
		if t.startAt > 0 {
			t.logEvent(t.log.Warn()).Str("file", t.path).Int64("position", t.startAt).
				Msg("not a regular file, cannot seek to the committed position; reading from the start of the stream")
		}
		t.stream = newAsyncReader(f, f)
		t.waiting = false
		return true, nil
	}
	if t.startAt > 0 {
		if st.Size() < t.startAt {
			t.logEvent(t.log.Warn()).Str("file", t.path).Int64("position", t.startAt).Int64("size", st.Size()).
				Msg("file is shorter than the committed position; lines before it are skipped")
		}
		if _, err := f.Seek(t.startAt, io.SeekStart); err != nil {
			f.Close()
			return false, pathError("cannot seek in", t.path, err)
		}
	}
	t.file = f
	t.pos = t.startAt
	t.waiting = false
	// No read buffer until the file holds bytes past the position: a task
	// tailing an empty or fully read file, as most idle ones are, would
	// otherwise allocate 2*readSize at its first look only to drop it a
	// second later, and a worker starting hundreds of them at once would
	// grow its heap by that much, which the Go runtime returns to the
	// system only slowly.
	t.released = true
	if t.warned {
		t.logEvent(t.log.Info()).Str("file", t.path).Msg("file appeared; reading it")
	}
	return true, nil
}

func pathError(what, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("file source: %s %s: %w", what, path, err)
}

// LendsRecords says that a Poll's records are written over at the next Poll
// (connectors.RecordLender): a busy task makes its records once.
func (t *SourceTask) LendsRecords() bool { return true }

// KeepsPollDeadline says that Poll returns by its context's deadline on
// its own timer (connectors.DeadlineKeeper): reading a file never blocks,
// and a stream is waited for on a channel beside the timer.
func (t *SourceTask) KeepsPollDeadline() bool { return true }

// ReturnsWhenIdle says that Poll returns at once when no look at the file is
// due before its deadline (connectors.IdleReturner): the runtime then naps
// until the deadline and holds no goroutine for the task meanwhile. An idle
// task looks once a second, so each of its Polls returns at once. A stream
// (stdin, a FIFO) is read by a goroutine of its own and waited for in Poll,
// so that a line is delivered when it arrives; a path that turns out to be
// a stream only once it appears is polled when the runtime's nap ends,
// within a second, as Connect's task looks again after a second.
func (t *SourceTask) ReturnsWhenIdle() bool {
	t.returnsWhenIdle = t.stream == nil
	return t.returnsWhenIdle
}

func (t *SourceTask) Poll(ctx context.Context) ([]*connectors.SourceRecord, error) {
	if t.closed {
		return nil, errors.New("file source: poll after close")
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultPollWait)
	}
	// The next look is due at nextLook whichever Poll it falls in: the
	// runtime's Polls end at their deadline and must not make an idle task
	// look more often than its wait says. A look may move by up to half
	// its wait (lookSlack) onto a moment the task is awake anyway: the
	// start of a Poll, or the wake-up that ends one. The runtime calls
	// Poll again as soon as one ends, every second when idle, so an idle
	// task's look settles on the end of each Poll: one wake-up a second,
	// not one for the Poll and one for the look. A chunk a stream
	// delivered is looked at at once.
	due := t.nextLook.Add(-t.lookSlack)
	for {
		if time.Now().Before(due) && (t.stream == nil || t.stream.held == nil) {
			wake := t.nextLook
			if deadline.Sub(wake) <= t.lookSlack {
				wake = deadline
			}
			if t.returnsWhenIdle && !wake.Before(deadline) {
				// No look due before the deadline: the runtime naps
				// until it, and the look is made at the next Poll.
				// A look due sooner (a file read a moment ago is
				// looked at again after 50 ms, 100 ms, ...) is
				// waited for here.
				return nil, nil
			}
			if !t.sleep(ctx, deadline, time.Until(wake)) {
				// The Poll is over. Unless it was cancelled, a look
				// due within its slack is made now, on this wake-up.
				if errors.Is(ctx.Err(), context.Canceled) || time.Until(t.nextLook) > t.lookSlack {
					return nil, nil
				}
				recs, _, err := t.look()
				return recs, err
			}
			due = t.nextLook
			continue
		}
		if recs, found, err := t.look(); found {
			return recs, err
		}
		due = t.nextLook
	}
}

// look opens the file if it is still missing and reads the lines there
// are. found is false when it found nothing; the next look is then
// scheduled, later each time nothing is found.
func (t *SourceTask) look() (recs []*connectors.SourceRecord, found bool, err error) {
	if t.waiting {
		opened, err := t.openFile()
		if err != nil {
			return nil, true, err
		}
		if !opened {
			t.lookIn(missingInterval)
			return nil, false, nil
		}
	}
	recs, err = t.readBatch()
	if err != nil || len(recs) > 0 {
		t.tailWait = tailInterval
		t.nextLook, t.lookSlack = time.Time{}, 0
		return recs, true, err
	}
	t.lookIn(t.tailWait)
	if t.tailWait < maxTailInterval {
		t.tailWait = min(2*t.tailWait, maxTailInterval)
	} else {
		t.releaseIdle()
	}
	return nil, false, nil
}

// lookIn schedules the next look wait from now.
func (t *SourceTask) lookIn(wait time.Duration) {
	t.nextLook = time.Now().Add(wait)
	t.lookSlack = wait / 2
}

// releaseIdle drops the read buffer when nothing is pending in it. A stream
// delivers its chunks through asyncReader, so its buffer comes back at the
// next chunk; a file's comes back once its size shows more (fill).
func (t *SourceTask) releaseIdle() {
	if t.buf == nil || t.start != t.end {
		return
	}
	t.buf = nil
	t.start, t.end, t.scanned = 0, 0, 0
	t.released = t.file != nil
	t.lent = lentLines{}
}

// sleep waits for step, or less when the deadline or ctx comes first, or
// until a blocking stream delivers data. It reports whether Poll has time
// left to look again.
func (t *SourceTask) sleep(ctx context.Context, deadline time.Time, step time.Duration) bool {
	left := time.Until(deadline)
	if left <= 0 || ctx.Err() != nil {
		return false
	}
	var data <-chan chunk
	if t.stream != nil && t.stream.held == nil && !t.stream.ended {
		data = t.stream.out
	}
	// The task's one timer ends the wait, also at the Poll's deadline:
	// the task keeps that deadline itself (KeepsPollDeadline), and the
	// runtime does not cancel ctx at it. ctx ends the wait when the task
	// stops.
	if t.timer == nil {
		t.timer = time.NewTimer(min(step, left))
	} else {
		t.timer.Reset(min(step, left))
	}
	defer t.timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.timer.C:
		return time.Until(deadline) > 0
	case c, ok := <-data:
		if ok {
			t.stream.held = &c
		} else {
			t.stream.ended = true
		}
		return true
	}
}

// readBatch returns the complete lines available now, at most batchSize, and
// never blocks.
func (t *SourceTask) readBatch() ([]*connectors.SourceRecord, error) {
	// The last Poll's records are written over (LendsRecords).
	last := len(t.lent.batch)
	recs := t.lent.reuse()
	defer func() { t.text = "" }()
	for len(recs) < t.batchSize {
		if line, ok := t.nextLine(); ok {
			recs = append(recs, t.record(line))
			continue
		}
		if t.err != nil {
			break
		}
		n, err := t.fill()
		if err != nil {
			t.err = err
			break
		}
		if n == 0 {
			break
		}
	}
	t.lent.batch = recs
	if len(recs) == 0 {
		t.lent.dropLines(last)
	}
	if len(recs) == 0 && t.err != nil {
		return nil, t.err
	}
	return recs, nil
}

func (t *SourceTask) record(line string) *connectors.SourceRecord {
	lr := t.lent.take()
	r := &lr.record
	// The line's header, which making it the record's value (an
	// interface) would allocate, is kept beside the record.
	lr.line = line
	boxed := strbox.Of(&lr.line)
	// Field by field: a composite literal would be built aside and copied
	// in whole, write barriers and all. A record written over holds the
	// same fields as the one before it: a task reads either a file (an
	// integer offset) or standard input (its one offset map), and sets
	// nothing else.
	r.Partition, r.Topic = t.partition, t.topic
	if t.path != "" {
		// The offset is given as an integer, not a map per line (see
		// SourceRecord.OffsetKey).
		r.OffsetKey, r.OffsetInt = PositionField, t.pos
	} else {
		// Standard input has no position: every line's offset is
		// {"position": null}, as Connect's, one map for all of them.
		if t.stdinOffset == nil {
			t.stdinOffset = map[string]any{PositionField: nil}
		}
		r.Offset = t.stdinOffset
	}
	r.ValueSchema, r.Value = connectors.StringSchema, boxed
	return r
}

// lineRecord is a record and the header of its line, which the record's
// value points at (strbox): one slab holds both.
type lineRecord struct {
	record connectors.SourceRecord
	line   string
}

// lentLines is where a task's records are: lent to the runtime from one
// Poll to the next, and written over then (LendsRecords), so that a busy
// task makes its records once rather than at every Poll. Records are carved
// from slabs, one allocation for many rather than one each. Slabs double,
// from a few records up to recordSlab, so that a task that reads a line at
// a time holds little; a task idle long enough to let its read buffer go
// lets them go too (releaseIdle).
type lentLines struct {
	slabs [][]lineRecord
	slab  int // the slab the next record is taken from
	next  int // the next record in it
	// batch is the slice of the last Poll's records, whose array the
	// next Poll fills again.
	batch []*connectors.SourceRecord
}

// reuse starts a Poll: its records are taken from the first slab on, and
// returned in the last Poll's slice.
func (l *lentLines) reuse() []*connectors.SourceRecord {
	l.slab, l.next = 0, 0
	return l.batch[:0]
}

// take returns the next record's place.
func (l *lentLines) take() *lineRecord {
	if l.slab < len(l.slabs) && l.next == len(l.slabs[l.slab]) {
		l.slab, l.next = l.slab+1, 0
	}
	if l.slab == len(l.slabs) {
		size := 8
		if n := len(l.slabs); n > 0 {
			size = min(2*len(l.slabs[n-1]), recordSlab)
		}
		l.slabs = append(l.slabs, make([]lineRecord, size))
	}
	lr := &l.slabs[l.slab][l.next]
	l.next++
	return lr
}

// dropLines lets go of the lines of the first n records, those of the last
// Poll, when a Poll found none: a task waiting at the end of its file keeps
// no text of a poll (a string of up to its read buffer) alive through them.
func (l *lentLines) dropLines(n int) {
	for _, slab := range l.slabs {
		if n <= 0 {
			return
		}
		for i := range slab[:min(n, len(slab))] {
			slab[i].line, slab[i].record.Value = "", nil
		}
		n -= len(slab)
	}
}

// recordSlab is the most records one slab holds.
const recordSlab = 256

// nextLine cuts the next line off the pending bytes the way Connect's
// FileStreamSourceTask does: a line ends at \n, \r\n or \r, and a \r that is
// the last pending byte waits for the next byte to tell \r from \r\n.
func (t *SourceTask) nextLine() (string, bool) {
	p := t.buf[t.start:t.end]
	seg := p[t.scanned:]
	limit := len(seg)
	nl := bytes.IndexByte(seg, '\n')
	if nl >= 0 {
		limit = nl
	}
	until, next := -1, -1
	if cr := bytes.IndexByte(seg[:limit], '\r'); cr >= 0 {
		if cr+1 == len(seg) {
			t.scanned += cr
			return "", false
		}
		until, next = cr, cr+1
		if seg[cr+1] == '\n' {
			next++
		}
	} else if nl >= 0 {
		until, next = nl, nl+1
	} else {
		t.scanned = len(p)
		return "", false
	}
	until += t.scanned
	next += t.scanned
	// Bytes at a file position never change, so a line inside text is
	// text's substring there; otherwise text becomes every pending byte.
	at := t.pos - t.textPos
	if t.text == "" || at < 0 || at+int64(until) > int64(len(t.text)) {
		t.text, t.textPos, at = string(p), t.pos, 0
	}
	line := t.text[at : at+int64(until)]
	t.start += next
	t.pos += int64(next)
	t.scanned = 0
	return line, true
}

// fill reads more bytes after the pending ones and returns how many arrived.
func (t *SourceTask) fill() (int, error) {
	if t.released {
		// The file's size tells whether there is more, without a buffer
		// to read into; Connect's task also reads only when the stream
		// reports bytes available, which for a file is size minus
		// position.
		size, err := t.sizer.size(t.file)
		if err != nil {
			return 0, pathError("cannot stat", t.path, err)
		}
		if size <= t.pos {
			return 0, nil
		}
		t.released = false
	}
	if t.stream != nil {
		return t.fillFromStream()
	}
	if err := t.makeRoom(); err != nil {
		return 0, err
	}
	n, err := t.file.Read(t.buf[t.end:])
	t.end += n
	if err != nil && err != io.EOF {
		return n, pathError("cannot read", t.path, err)
	}
	return n, nil
}

// makeRoom ensures a large read fits behind the pending bytes, moving them to
// the front of the buffer or, for a line longer than the buffer, growing it.
func (t *SourceTask) makeRoom() error {
	if t.buf == nil {
		t.buf = make([]byte, 2*readSize)
	}
	if len(t.buf)-t.end >= readSize {
		return nil
	}
	pending := t.end - t.start
	if len(t.buf)-pending < readSize {
		if pending >= maxLineBytes {
			return fmt.Errorf("file source: %s: line at position %d is longer than %d bytes", t.name(), t.pos, maxLineBytes)
		}
		grown := make([]byte, 2*len(t.buf))
		copy(grown, t.buf[t.start:t.end])
		t.buf = grown
	} else {
		copy(t.buf, t.buf[t.start:t.end])
	}
	t.start, t.end = 0, pending
	return nil
}

func (t *SourceTask) fillFromStream() (int, error) {
	s := t.stream
	if s.held == nil && !s.ended {
		select {
		case c, ok := <-s.out:
			if ok {
				s.held = &c
			} else {
				s.ended = true
			}
		default:
		}
	}
	if s.held == nil {
		return 0, nil
	}
	if s.held.err != nil {
		return 0, pathError("cannot read", t.name(), s.held.err)
	}
	// Only a chunk to copy needs the buffer: an idle stream's was released.
	if err := t.makeRoom(); err != nil {
		return 0, err
	}
	n := copy(t.buf[t.end:], s.held.data)
	t.end += n
	if n == len(s.held.data) {
		s.held = nil
	} else {
		s.held.data = s.held.data[n:]
	}
	return n, nil
}

func (t *SourceTask) name() string {
	if t.path == "" {
		return "stdin"
	}
	return t.path
}

// Commit has nothing to do: the file is left as it is, as in Connect.
func (t *SourceTask) Commit(context.Context) error { return nil }

func (t *SourceTask) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	var err error
	if t.stream != nil {
		err = t.stream.close()
		t.stream = nil
	}
	if t.file != nil {
		err = errors.Join(err, t.file.Close())
		t.file = nil
	}
	t.buf = nil
	return err
}

type chunk struct {
	data []byte
	err  error
}

// asyncReader reads a stream whose reads block (stdin, a FIFO) on its own
// goroutine, so that Poll can give up at its deadline. At most two chunks
// are in flight: the one in the channel and the one being read.
type asyncReader struct {
	out   chan chunk
	done  chan struct{}
	f     *os.File // closed by close; nil for stdin, which is not ours to close
	held  *chunk   // received but not yet copied into the task's buffer
	ended bool
}

func newAsyncReader(r io.Reader, f *os.File) *asyncReader {
	a := &asyncReader{out: make(chan chunk, 1), done: make(chan struct{}), f: f}
	go a.run(r)
	return a
}

func (a *asyncReader) run(r io.Reader) {
	defer close(a.out)
	var idle *time.Timer
	wait := tailInterval
	for {
		b := make([]byte, readSize)
		n, err := r.Read(b)
		if n > 0 {
			wait = tailInterval
			select {
			case a.out <- chunk{data: b[:n]}:
			case <-a.done:
				return
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			// A writer may still come (a FIFO) or the input may grow:
			// tail it, waiting longer each time nothing came, as Poll does.
			if idle == nil {
				idle = time.NewTimer(wait)
			} else {
				idle.Reset(wait)
			}
			wait = min(2*wait, maxTailInterval)
			select {
			case <-a.done:
				idle.Stop()
				return
			case <-idle.C:
			}
		default:
			select {
			case a.out <- chunk{err: err}:
			case <-a.done:
			}
			return
		}
	}
}

// close stops the reader. Closing a FIFO unblocks its pending read; a read
// blocked on stdin ends only when stdin delivers or closes, because closing
// the process's stdin is not the task's to do.
func (a *asyncReader) close() error {
	close(a.done)
	if a.f != nil {
		return a.f.Close()
	}
	return nil
}

var nopLogger = zerolog.Nop()

// logEvent adds the field a child logger with connector_class would have put
// first, so lines read as before.
func (t *SourceTask) logEvent(e *zerolog.Event) *zerolog.Event {
	return e.Str("connector_class", "FileStreamSource")
}
