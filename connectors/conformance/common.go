// Package conformance is a test suite every connector passes: RunSource for
// source connectors, RunSink for sink connectors. A connector package runs it
// from a test with a harness that tells the suite how to make a valid config,
// how to make data appear upstream (sources) or read it back (sinks), and how
// to tell records apart.
//
// The suite drives connectors in-process with in-memory task contexts, as
// the runtime would, and checks what the runtime relies on: a sane config
// definition, task splitting within tasks.max, every record exactly once and
// in order, resuming right after committed offsets, bounded batches and
// deadlines, at-least-once writes across a crash, offsets committed only for
// durable data (invariant 1 of docs/design.md), and a clean close.
package conformance

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

const (
	defaultTimeout = 10 * time.Second
	// pollWait is the deadline of each Poll the suite makes while waiting
	// for records; quietWait that of the polls that must find nothing.
	pollWait  = 250 * time.Millisecond
	quietWait = 300 * time.Millisecond
	// deadlineSlack is how late a Poll may return after its deadline.
	deadlineSlack = time.Second
)

var validTypes = map[connectors.ConfigType]bool{
	connectors.TypeString: true, connectors.TypeInt: true, connectors.TypeLong: true,
	connectors.TypeDouble: true, connectors.TypeBoolean: true, connectors.TypeList: true,
	connectors.TypePassword: true, connectors.TypeClass: true,
}

var validImportance = map[connectors.Importance]bool{
	connectors.High: true, connectors.Medium: true, connectors.Low: true,
}

func checkPlugin(t *testing.T, p connectors.Plugin, want connectors.Type) connectors.Connector {
	t.Helper()
	if p.Class == "" || p.New == nil {
		t.Fatalf("plugin needs a class and a constructor: %+v", p)
	}
	if p.Type != want {
		t.Errorf("plugin %s has type %q, want %q", p.Class, p.Type, want)
	}
	if p.Version == "" {
		t.Errorf("plugin %s has no version", p.Class)
	}
	reg := connectors.NewRegistry()
	if err := reg.Register(p); err != nil {
		t.Fatalf("registering plugin: %v", err)
	}
	for _, n := range p.Names() {
		got, err := reg.Lookup(n)
		if err != nil || got.Class != p.Class {
			t.Errorf("lookup by %q: %v, %v", n, got.Class, err)
		}
	}
	c := p.New()
	if c == nil {
		t.Fatalf("plugin %s: New returned nil", p.Class)
	}
	switch want {
	case connectors.Source:
		if _, ok := c.(connectors.SourceConnector); !ok {
			t.Fatalf("plugin %s: %T is not a SourceConnector", p.Class, c)
		}
	case connectors.Sink:
		if _, ok := c.(connectors.SinkConnector); !ok {
			t.Fatalf("plugin %s: %T is not a SinkConnector", p.Class, c)
		}
	}
	return c
}

func configErrors(vals []connectors.ConfigValue) map[string][]string {
	out := map[string][]string{}
	for _, v := range vals {
		if len(v.Errors) > 0 {
			out[v.Name] = v.Errors
		}
	}
	return out
}

// checkConfigDef checks that the definition documents every key, that
// defaults parse, that the valid config validates, and that leaving out a
// required key gives an error naming it.
func checkConfigDef(t *testing.T, c connectors.Connector, valid map[string]string) {
	t.Helper()
	def := c.Config()
	if def == nil {
		t.Fatal("Config returned nil")
	}
	for _, k := range def.Keys() {
		if k.Name == "" || strings.TrimSpace(k.Name) != k.Name {
			t.Errorf("key %q: bad name", k.Name)
		}
		if strings.TrimSpace(k.Doc) == "" {
			t.Errorf("key %q has no documentation", k.Name)
		}
		if !validTypes[k.Type] {
			t.Errorf("key %q has unknown type %q", k.Name, k.Type)
		}
		if !validImportance[k.Importance] {
			t.Errorf("key %q has unknown importance %q", k.Name, k.Importance)
		}
		if k.Required && k.Default != "" {
			t.Errorf("key %q is required yet has default %q, which would be ignored", k.Name, k.Default)
		}
	}
	if errs := configErrors(def.Validate(valid)); len(errs) > 0 {
		t.Errorf("the harness's valid config %v has errors: %v", valid, errs)
	}
	if _, err := def.Parse(valid); err != nil {
		t.Errorf("Parse of the valid config: %v", err)
	}
	if v, ok := c.(connectors.ConfigValidator); ok {
		if errs := v.ValidateConfig(maps.Clone(valid)); len(errs) > 0 {
			t.Errorf("ValidateConfig of the valid config: %v", errs)
		}
	}
	for _, k := range def.Keys() {
		cfg := maps.Clone(valid)
		delete(cfg, k.Name)
		errs := configErrors(def.Validate(cfg))[k.Name]
		if !k.Required {
			if len(errs) > 0 {
				t.Errorf("key %q: its default %q does not validate: %v", k.Name, k.Default, errs)
			}
			continue
		}
		named := false
		for _, e := range errs {
			named = named || strings.Contains(e, k.Name)
		}
		if !named {
			t.Errorf("a config without required key %q gets no error naming it (errors: %v)", k.Name, errs)
		}
		if _, err := def.Parse(cfg); err == nil || !strings.Contains(err.Error(), k.Name) {
			t.Errorf("Parse without required key %q: error %v does not name it", k.Name, err)
		}
	}
}

// checkTaskConfigs checks that the connector splits its work into 1 to
// maxTasks task configs for maxTasks 1 to 4.
func checkTaskConfigs(t *testing.T, p connectors.Plugin, valid map[string]string) {
	t.Helper()
	c := p.New()
	ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
	defer cancel()
	cc := NewConnectorContext(t, "conformance")
	if err := c.Start(ctx, cc, maps.Clone(valid)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	for maxTasks := 1; maxTasks <= 4; maxTasks++ {
		tcs, err := c.TaskConfigs(ctx, maxTasks)
		if err != nil {
			t.Errorf("TaskConfigs(%d): %v", maxTasks, err)
			continue
		}
		if len(tcs) < 1 || len(tcs) > maxTasks {
			t.Errorf("TaskConfigs(%d) returned %d configs, want 1..%d", maxTasks, len(tcs), maxTasks)
		}
		for i, tc := range tcs {
			if tc == nil {
				t.Errorf("TaskConfigs(%d)[%d] is nil", maxTasks, i)
			}
		}
	}
	if errs := cc.Errors(); len(errs) > 0 {
		t.Errorf("connector raised errors: %v", errs)
	}
}

// startConnector starts a connector on cfg and returns its first task config.
func startConnector(t *testing.T, p connectors.Plugin, cfg map[string]string) map[string]string {
	t.Helper()
	c := p.New()
	ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
	defer cancel()
	if err := c.Start(ctx, NewConnectorContext(t, "conformance"), maps.Clone(cfg)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer c.Stop()
	tcs, err := c.TaskConfigs(ctx, 1)
	if err != nil || len(tcs) != 1 {
		t.Fatalf("TaskConfigs(1) = %d configs, %v; want 1", len(tcs), err)
	}
	return tcs[0]
}

// brokenConfig is the task config Open must reject: the harness's, or the
// valid one without its first required key.
func brokenConfig(t *testing.T, def *connectors.ConfigDef, valid map[string]string, custom func(*testing.T, map[string]string) map[string]string) map[string]string {
	t.Helper()
	if custom != nil {
		return custom(t, maps.Clone(valid))
	}
	for _, k := range def.Keys() {
		if k.Required {
			cfg := maps.Clone(valid)
			delete(cfg, k.Name)
			return cfg
		}
	}
	t.Skip("the connector has no required key and the harness no BrokenTaskConfig")
	return nil
}

// goroutineBaseline returns a check that fails t when goroutines started
// since the call are still running after a settle period. It tells new
// goroutines by their ids, which are never reused, so goroutines of earlier
// tests ending meanwhile cannot hide a leak the way a bare count would. (Ids
// are not allocated in order across Ps: compare sets, not a maximum.)
func goroutineBaseline(t *testing.T) func() {
	t.Helper()
	before := goroutines()
	return func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			stacks := goroutines()
			var leaked []string
			for id, stack := range stacks {
				if _, old := before[id]; !old && !strings.Contains(stack, "testing.tRunner") {
					leaked = append(leaked, stack)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("goroutine leak: %d goroutines started during the test still run after Close:\n%s",
					len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// goroutines returns the stack of every goroutine by id.
func goroutines() map[int64]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[int64]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		var id int64
		if _, err := fmt.Sscanf(g, "goroutine %d ", &id); err != nil {
			continue
		}
		out[id] = g
	}
	return out
}

// Poll calls task.Poll with a deadline wait from now and fails t when Poll
// errs (a retriable error returns no records instead) or returns later than the deadline plus a second. Lateness is
// measured against a timer that expires at the same deadline, so that a
// machine too loaded to run either on time does not fail the check.
//
// A task that keeps its deadline itself (connectors.DeadlineKeeper) gets
// what the runtime gives it: a context with the deadline that is not
// cancelled at it. A watchdog cancels it well after the deadline, so that
// a task that waits for the context anyway fails the check, not the test's
// timeout.
//
// A task whose Poll returns at once when it has nothing
// (connectors.IdleReturner; asked before each Poll, so it must answer the
// same each time) is polled as the runtime polls it: an empty Poll that
// returned before its deadline is followed by a nap until the deadline.
//
// The records of a task that lends them (connectors.RecordLender) are
// copied before Poll returns them, so that a caller may keep them past the
// next Poll, when the task writes over its own.
func Poll(t testing.TB, task connectors.SourceTask, wait time.Duration) []*connectors.SourceRecord {
	t.Helper()
	recs := pollTask(t, task, wait)
	if lendsRecords(task) {
		return cloneRecords(recs)
	}
	return recs
}

// lendsRecords says whether task writes over a Poll's records at its next
// Poll (connectors.RecordLender).
func lendsRecords(task connectors.SourceTask) bool {
	l, ok := task.(connectors.RecordLender)
	return ok && l.LendsRecords()
}

// cloneRecords copies recs deeply enough that a lending task writing over
// its own records changes none of the copies.
func cloneRecords(recs []*connectors.SourceRecord) []*connectors.SourceRecord {
	if recs == nil {
		return nil
	}
	out := make([]*connectors.SourceRecord, len(recs))
	for i, r := range recs {
		if r == nil {
			continue
		}
		c := *r
		c.Key, c.Value = cloneValue(r.Key), cloneValue(r.Value)
		if r.Headers != nil {
			c.Headers = make([]connectors.Header, len(r.Headers))
			for j, h := range r.Headers {
				h.Value = cloneValue(h.Value)
				c.Headers[j] = h
			}
		}
		if r.KafkaPartition != nil {
			p := *r.KafkaPartition
			c.KafkaPartition = &p
		}
		out[i] = &c
	}
	return out
}

// cloneValue copies the containers of a Connect value (see
// connectors.Schema for the Go type of each).
func cloneValue(v any) any {
	switch x := v.(type) {
	case *connectors.StructValue:
		if x == nil {
			return x
		}
		return &connectors.StructValue{Schema: x.Schema, Values: cloneValue(x.Values).([]any)}
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	case []byte:
		if x == nil {
			return x
		}
		return append([]byte{}, x...)
	case string:
		// Boxed again: a task may box a string in place (strbox), and
		// its box would change when it writes over its records.
		return x
	}
	return v
}

// pollTask is Poll without the copy: the records as the task returned them.
func pollTask(t testing.TB, task connectors.SourceTask, wait time.Duration) []*connectors.SourceRecord {
	t.Helper()
	var ctx context.Context
	var cancel context.CancelFunc
	keeps := false
	if k, ok := task.(connectors.DeadlineKeeper); ok && k.KeepsPollDeadline() {
		keeps = true
		var inner context.Context
		inner, cancel = context.WithCancel(context.Background())
		ctx = connectors.KeptDeadline(inner, time.Now().Add(wait))
		watchdog := time.AfterFunc(wait+3*deadlineSlack, cancel)
		defer watchdog.Stop()
	} else {
		ctx, cancel = context.WithTimeout(context.Background(), wait)
	}
	defer cancel()
	deadline, _ := ctx.Deadline()
	returns := false
	if r, ok := task.(connectors.IdleReturner); ok {
		returns = r.ReturnsWhenIdle()
	}
	ref := make(chan time.Time, 1)
	go func() {
		time.Sleep(time.Until(deadline))
		ref <- time.Now()
	}()
	recs, err := task.Poll(ctx)
	returned := time.Now()
	if err != nil && connectors.IsRetriable(err) {
		// The runtime polls again after a retriable error (as Connect
		// does after a RetriableException), so the suite does too: a
		// CDC task whose predecessor's replication connection has not
		// yet been released by the server says so this way.
		// The rest of the poll's time is the backoff.
		t.Logf("Poll: retriable: %v", err)
		<-ctx.Done()
		return nil
	}
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	if late := returned.Sub(deadline); late > deadlineSlack {
		// The reference timer has fired by now, unless the scheduler is as
		// late for it as it may have been for Poll.
		refLate := (<-ref).Sub(deadline)
		if late > refLate+deadlineSlack {
			if keeps {
				t.Fatalf("Poll with a %v deadline returned %v after it (a timer for the same deadline fired %v late); "+
					"the task reports KeepsPollDeadline, so only its own timer may end a wait at the deadline", wait, late, refLate)
			}
			t.Fatalf("Poll with a %v deadline returned %v after it (a timer for the same deadline fired %v late)", wait, late, refLate)
		}
	}
	if returns && len(recs) == 0 {
		time.Sleep(time.Until(deadline)) // the runtime's nap
	}
	return recs
}
