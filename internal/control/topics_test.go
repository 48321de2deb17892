package control_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/internal/control"
	"github.com/sluice-io/sluice/internal/control/controltest"
	"github.com/sluice-io/sluice/internal/state"
)

// topicsEnv is a Controller whose topic tracking is the env's real status
// log, configured like a worker's.
func topicsEnv(t *testing.T, tracking state.TopicTracking) (*controltest.Env, *control.Controller) {
	t.Helper()
	e := controltest.NewEnv(t)
	return e, e.TopicsController(t, tracking)
}

func TestTopicsAndReset(t *testing.T) {
	e, c := topicsEnv(t, state.TopicTracking{Enabled: true, AllowReset: true})
	if _, err := c.Create(ctx(t), "src", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	got, err := c.Topics("src")
	if want := map[string]control.ActiveTopics{"src": {Topics: []string{}}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Topics before any use = %#v, %v; want %#v", got, err, want)
	}
	e.Statuses.RecordActiveTopic("src", 1, "zeta")
	e.Statuses.RecordActiveTopic("src", 0, "alpha")
	e.Statuses.RecordActiveTopic("other", 0, "beta")
	got, err = c.Topics("src")
	if want := map[string]control.ActiveTopics{"src": {Topics: []string{"alpha", "zeta"}}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Topics = %#v, %v; want %#v", got, err, want)
	}

	if err := c.ResetTopics(ctx(t), "src"); err != nil {
		t.Fatal(err)
	}
	got, err = c.Topics("src")
	if want := map[string]control.ActiveTopics{"src": {Topics: []string{}}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Topics after a reset = %#v, %v; want %#v", got, err, want)
	}
	if other := e.Statuses.ActiveTopics("other"); !reflect.DeepEqual(other, []string{"beta"}) {
		t.Fatalf("the reset touched another connector: %v", other)
	}

	// Unknown connector: 404 for both.
	_, err = c.Topics("nope")
	if code(err) != http.StatusNotFound {
		t.Fatalf("Topics of an unknown connector: %v", err)
	}
	e.Statuses.RecordActiveTopic("nope", 0, "t")
	if err := c.ResetTopics(ctx(t), "nope"); code(err) != http.StatusNotFound {
		t.Fatalf("ResetTopics of an unknown connector: %v", err)
	}
	if got := e.Statuses.ActiveTopics("nope"); len(got) != 1 {
		t.Fatalf("a refused reset reset: %v", got)
	}

	// Not ready: 503, as every connector request.
	e.Ready.Set(false)
	if _, err := c.Topics("src"); code(err) != http.StatusServiceUnavailable {
		t.Fatalf("Topics while starting: %v", err)
	}
	if err := c.ResetTopics(ctx(t), "src"); code(err) != http.StatusServiceUnavailable {
		t.Fatalf("ResetTopics while starting: %v", err)
	}
}

func TestTopicsDisabled(t *testing.T) {
	e, c := topicsEnv(t, state.TopicTracking{Enabled: false, AllowReset: true})
	if _, err := c.Create(ctx(t), "src", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	// Connect's 403 and message, checked before the connector is looked
	// up.
	for _, name := range []string{"src", "nope"} {
		_, err := c.Topics(name)
		if code(err) != http.StatusForbidden || err.Error() != "Topic tracking is disabled." {
			t.Fatalf("Topics(%s) with tracking disabled: %v", name, err)
		}
		err = c.ResetTopics(ctx(t), name)
		if code(err) != http.StatusForbidden || err.Error() != "Topic tracking is disabled." {
			t.Fatalf("ResetTopics(%s) with tracking disabled: %v", name, err)
		}
	}

	e.Statuses.SetTopicTracking(state.TopicTracking{Enabled: true, AllowReset: false})
	e.Statuses.RecordActiveTopic("src", 0, "t")
	err := c.ResetTopics(ctx(t), "src")
	if code(err) != http.StatusForbidden || err.Error() != "Topic tracking reset is disabled." {
		t.Fatalf("ResetTopics with reset disallowed: %v", err)
	}
	if got, err := c.Topics("src"); err != nil || !reflect.DeepEqual(got["src"].Topics, []string{"t"}) {
		t.Fatalf("Topics with reset disallowed = %v, %v", got, err)
	}
}

// failingTopics is a backend whose reset fails.
type failingTopics struct{ control.TopicsBackend }

func (failingTopics) ResetActiveTopics(context.Context, string) error {
	return errors.New("broker gone")
}

func TestResetTopicsFailureIs500(t *testing.T) {
	e := controltest.NewEnv(t)
	c, err := control.New(control.Options{
		Configs: e.Configs, Statuses: e.Statuses, Plugins: controltest.Registry(),
		Topics: failingTopics{e.Statuses},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx(t), "src", controltest.SourceConfig(), ""); err != nil {
		t.Fatal(err)
	}
	err = c.ResetTopics(ctx(t), "src")
	if code(err) != http.StatusInternalServerError || !strings.Contains(err.Error(), "broker gone") || !strings.Contains(err.Error(), "src") {
		t.Fatalf("failed reset: %v", err)
	}

	// Without a backend, the endpoints say so rather than pretending.
	c, err = control.New(control.Options{Configs: e.Configs, Statuses: e.Statuses, Plugins: controltest.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Topics("src"); code(err) != http.StatusNotImplemented {
		t.Fatalf("Topics without a backend: %v", err)
	}
	if err := c.ResetTopics(ctx(t), "src"); code(err) != http.StatusNotImplemented {
		t.Fatalf("ResetTopics without a backend: %v", err)
	}
}
