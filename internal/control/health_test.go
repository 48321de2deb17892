package control_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
)

// standingVar is a worker's standing that a test changes between checks.
type standingVar struct {
	mu sync.Mutex
	s  control.Standing
}

func (v *standingVar) set(s control.Standing) { v.mu.Lock(); v.s = s; v.mu.Unlock() }
func (v *standingVar) get() control.Standing  { v.mu.Lock(); defer v.mu.Unlock(); return v.s }

// Every state of GET /health, in KIP-1017's shape: the status goes with
// its code, and the message keeps Connect's words and says why.
func TestHealthReportsEachStateWithWhy(t *testing.T) {
	e := controltest.NewEnv(t)
	var standing standingVar
	var kafkaProblem error
	var mu sync.Mutex
	c, err := control.New(control.Options{
		Configs: e.Configs, Statuses: e.Statuses, Plugins: controltest.Registry(), WorkerID: "w1:8083",
		Ready: e.Ready.Get, Standing: standing.get,
		KafkaProblem: func() error { mu.Lock(); defer mu.Unlock(); return kafkaProblem },
	})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name        string
		ready       bool
		standing    control.Standing
		problem     error
		code        int
		status      string
		messageHas  []string
		messageLack string
	}{
		{name: "starting, nothing known yet", code: 503, status: "starting", messageHas: []string{"Worker is still starting up."}},
		{name: "starting, joining", standing: control.Standing{Pending: `joining group "c"`},
			code: 503, status: "starting", messageHas: []string{"Worker is still starting up", `joining group "c"`}},
		{name: "healthy", ready: true, code: 200, status: "healthy",
			messageHas: []string{"Worker has completed startup and is ready to handle requests."}},
		{name: "rebalancing", ready: true, standing: control.Standing{Pending: "rebalancing: waiting for an assignment"},
			code: 503, status: "starting", messageHas: []string{"rebalancing"}},
		{name: "broker lost", ready: true, standing: control.Standing{Unhealthy: "no answer from the group coordinator for 12s"},
			code: 500, status: "unhealthy", messageHas: []string{"Worker is unhealthy", "no answer from the group coordinator"}},
		{name: "lost while starting", standing: control.Standing{Unhealthy: "no answer from the group coordinator for 12s"},
			code: 500, status: "unhealthy", messageHas: []string{"no answer"}},
		{name: "credentials refused later", ready: true, problem: errors.New("SASL authentication failed for user \"connect\""),
			code: 500, status: "unhealthy", messageHas: []string{"Worker is unhealthy", "SASL authentication failed"}},
		{name: "healthy again", ready: true, code: 200, status: "healthy", messageLack: "unhealthy"},
	}
	for _, s := range steps {
		e.Ready.Set(s.ready)
		standing.set(s.standing)
		mu.Lock()
		kafkaProblem = s.problem
		mu.Unlock()
		h := c.Health()
		if h.Code != s.code || h.Status != s.status {
			t.Errorf("%s: %d %q (%s), want %d %q", s.name, h.Code, h.Status, h.Message, s.code, s.status)
		}
		for _, want := range s.messageHas {
			if !strings.Contains(h.Message, want) {
				t.Errorf("%s: message %q lacks %q", s.name, h.Message, want)
			}
		}
		if s.messageLack != "" && strings.Contains(h.Message, s.messageLack) {
			t.Errorf("%s: message %q has %q", s.name, h.Message, s.messageLack)
		}
	}
}
