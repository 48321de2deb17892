package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/state"
	"github.com/sluice-io/sluice/internal/storetest"
	"github.com/sluice-io/sluice/internal/testutil"
)

// callLog records, per connector name, the calls the runtime made into a
// callLogSource connector and whether two of them ever overlapped.
type callLog struct {
	mu      sync.Mutex
	cc      connectors.ConnectorContext // of the latest Start
	tasks   int                         // task configs TaskConfigs returns
	delay   time.Duration               // how long TaskConfigs takes
	calls   []string
	inCall  bool
	overlap bool
}

var (
	callLogsMu sync.Mutex
	callLogs   = map[string]*callLog{}
)

// newCallLog starts a fresh log for name, so a test run again (-count)
// does not see the calls of the run before.
func newCallLog(name string) *callLog {
	callLogsMu.Lock()
	defer callLogsMu.Unlock()
	l := &callLog{tasks: 1}
	callLogs[name] = l
	return l
}

func callLogFor(name string) *callLog {
	callLogsMu.Lock()
	defer callLogsMu.Unlock()
	l := callLogs[name]
	if l == nil {
		l = &callLog{tasks: 1}
		callLogs[name] = l
	}
	return l
}

// enter records a call and that it began while another was running.
func (l *callLog) enter(call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, call)
	if l.inCall {
		l.overlap = true
	}
	l.inCall = true
}

func (l *callLog) exit() {
	l.mu.Lock()
	l.inCall = false
	l.mu.Unlock()
}

func (l *callLog) snapshot() (calls []string, overlap bool, cc connectors.ConnectorContext) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls), l.overlap, l.cc
}

// callLogSource is testSource whose connector records its calls, and whose
// task count the test changes before asking for a reconfiguration.
type callLogSource struct {
	testSource
	log *callLog
}

func (c *callLogSource) Start(ctx context.Context, cc connectors.ConnectorContext, cfg map[string]string) error {
	c.log = callLogFor(cfg["name"])
	c.log.enter("start")
	defer c.log.exit()
	c.log.mu.Lock()
	c.log.cc = cc
	c.log.mu.Unlock()
	return c.testSource.Start(ctx, cc, cfg)
}

func (c *callLogSource) TaskConfigs(context.Context, int) ([]map[string]string, error) {
	c.log.enter("configs")
	defer c.log.exit()
	c.log.mu.Lock()
	n, delay := c.log.tasks, c.log.delay
	c.log.mu.Unlock()
	time.Sleep(delay)
	out := make([]map[string]string, n)
	for i := range out {
		out[i] = map[string]string{"name": c.config["name"], "topic": c.config["topic"], "task": strconv.Itoa(i)}
	}
	return out, nil
}

func (c *callLogSource) Stop() error {
	c.log.enter("stop")
	defer c.log.exit()
	return nil
}

func newCallLogEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, storetest.Start(t, "t", ProducerOpts()...), false, func(o *Options) {
		o.Registry.MustRegister(connectors.Plugin{Class: "test.CallLogSource", Type: connectors.Source, Version: "1",
			New: func() connectors.Connector { return &callLogSource{} }})
	})
}

// connectorGoroutines counts the goroutines in a connector's code or
// waiting for its next call.
func connectorGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			// Every goroutine's stack, blank-line separated.
			count := 0
			for _, g := range strings.Split(string(buf[:n]), "\n\n") {
				if strings.Contains(g, "actors.(*connectorRun)") || strings.Contains(g, "actors.(*connectorActor)") {
					count++
				}
			}
			return count
		}
		buf = make([]byte, 2*len(buf))
	}
}

// RequestTaskReconfiguration runs TaskConfigs again and the new tasks
// start; between calls a connector holds no goroutine of its own.
func TestConnectorReconfiguresOnRequest(t *testing.T) {
	e := newCallLogEnv(t)
	l := newCallLog("rc")
	e.create("rc", withConv(map[string]string{"name": "rc", "connector.class": "test.CallLogSource", "topic": e.topic("rc-out"), "tasks.max": "2"}))
	e.waitTaskState("rc", 0, state.StateRunning)
	testutil.Eventually(t, 10*time.Second, "no goroutine for an idle connector", func() error {
		if n := connectorGoroutines(); n != 0 {
			return fmt.Errorf("%d goroutines run connector calls", n)
		}
		return nil
	})
	l.mu.Lock()
	l.tasks = 2
	cc := l.cc
	l.mu.Unlock()
	cc.RequestTaskReconfiguration()
	e.waitTaskState("rc", 1, state.StateRunning)
	calls, overlap, _ := l.snapshot()
	if overlap || strings.Join(calls, ",") != "start,configs,configs" {
		t.Fatalf("calls %v (overlapping: %v), want start,configs,configs", calls, overlap)
	}
}

// The connector's calls run one at a time, in order: requests made while
// a TaskConfigs runs fold into one more, and Stop runs once, last.
func TestConnectorCallsRunOneAtATimeAndStopRunsLast(t *testing.T) {
	e := newCallLogEnv(t)
	l := newCallLog("one")
	l.delay = 20 * time.Millisecond
	e.create("one", withConv(map[string]string{"name": "one", "connector.class": "test.CallLogSource", "topic": e.topic("one-out")}))
	e.waitTaskState("one", 0, state.StateRunning)
	_, _, cc := l.snapshot()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(cc.RequestTaskReconfiguration)
	}
	wg.Wait()
	e.setTarget("one", state.TargetStopped)
	testutil.Eventually(t, 10*time.Second, "Stop called", func() error {
		if calls, _, _ := l.snapshot(); !slices.Contains(calls, "stop") {
			return fmt.Errorf("calls %v", calls)
		}
		return nil
	})
	cc.RequestTaskReconfiguration() // after Stop: nothing runs
	time.Sleep(100 * time.Millisecond)
	calls, overlap, _ := l.snapshot()
	configs := strings.Count(strings.Join(calls, ","), "configs")
	switch {
	case overlap:
		t.Fatalf("calls overlapped: %v", calls)
	case calls[0] != "start" || calls[len(calls)-1] != "stop" || slices.Index(calls, "stop") != len(calls)-1:
		t.Fatalf("calls %v: want start first and one stop, last", calls)
	case configs < 2 || configs > 4:
		t.Fatalf("%d TaskConfigs for 20 requests at once (calls %v): want them folded into one or two more", configs, calls)
	}
}

// RaiseError fails the connector: it is stopped, and its supervisor
// starts it again.
func TestConnectorRaiseErrorStopsAndRestartsIt(t *testing.T) {
	e := newCallLogEnv(t)
	l := newCallLog("raise")
	e.create("raise", withConv(map[string]string{"name": "raise", "connector.class": "test.CallLogSource", "topic": e.topic("raise-out")}))
	e.waitTaskState("raise", 0, state.StateRunning)
	_, _, cc := l.snapshot()
	cc.RaiseError(errors.New("the upstream went away"))
	cc.RaiseError(errors.New("a second error, folded into the first"))
	testutil.Eventually(t, 20*time.Second, "restarted", func() error {
		calls, _, _ := l.snapshot()
		if strings.Join(calls, ",") != "start,configs,stop,start,configs" {
			return fmt.Errorf("calls %v", calls)
		}
		if st, _ := e.statuses.Connector("raise"); st.State != state.StateRunning {
			return fmt.Errorf("connector %+v", st)
		}
		return nil
	})
}
