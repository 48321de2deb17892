package connconfig

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-io/sluice/connectors"
)

// plainSource declares nothing about exactly once.
type plainSource struct{}

func (plainSource) Config() *connectors.ConfigDef { return connectors.NewConfigDef() }
func (plainSource) Start(context.Context, connectors.ConnectorContext, map[string]string) error {
	return nil
}
func (plainSource) TaskConfigs(context.Context, int) ([]map[string]string, error) { return nil, nil }
func (plainSource) Stop() error                                                   { return nil }

// declaringSource answers the preflight questions with its fields.
type declaringSource struct {
	plainSource
	exactlyOnce, boundaries bool
}

func (s declaringSource) ExactlyOnceSupport(map[string]string) bool { return s.exactlyOnce }
func (s declaringSource) CanDefineTransactionBoundaries(map[string]string) bool {
	return s.boundaries
}

// Connect's preflight checks: each bad combination is refused on the key,
// with a message that says why; the good ones pass.
func TestValidateExactlyOnceRefusesWhatCannotBeHonoured(t *testing.T) {
	enabled := Worker{ExactlyOnce: ExactlyOnceEnabled}
	for _, tc := range []struct {
		name   string
		w      Worker
		conn   connectors.Connector
		config map[string]string
		key    string // "" when the config is valid
		says   string
	}{
		{"required on a disabled worker", Worker{}, declaringSource{exactlyOnce: true}, map[string]string{ExactlyOnceSupport: "required"}, ExactlyOnceSupport, "does not have exactly-once source support enabled"},
		{"required on a preparing worker", Worker{ExactlyOnce: ExactlyOncePreparing}, declaringSource{exactlyOnce: true}, map[string]string{ExactlyOnceSupport: "REQUIRED"}, ExactlyOnceSupport, "exactly.once.source.support=enabled"},
		{"required, connector silent", enabled, plainSource{}, map[string]string{ExactlyOnceSupport: "required"}, ExactlyOnceSupport, "does not implement the API required for preflight validation"},
		{"required, connector says no", enabled, declaringSource{}, map[string]string{ExactlyOnceSupport: "required"}, ExactlyOnceSupport, "does not support exactly-once semantics"},
		{"required, connector says yes", enabled, declaringSource{exactlyOnce: true}, map[string]string{ExactlyOnceSupport: "required"}, "", ""},
		{"requested anywhere", Worker{}, plainSource{}, map[string]string{ExactlyOnceSupport: "requested"}, "", ""},
		{"connector boundary, connector cannot", enabled, declaringSource{exactlyOnce: true}, map[string]string{TransactionBoundary: "connector"}, TransactionBoundary, "does not support connector-defined transaction boundaries"},
		{"connector boundary, connector silent", enabled, plainSource{}, map[string]string{TransactionBoundary: "Connector"}, TransactionBoundary, "does not support connector-defined transaction boundaries"},
		{"connector boundary, connector can", enabled, declaringSource{boundaries: true}, map[string]string{TransactionBoundary: "connector"}, "", ""},
		{"interval boundary on a disabled worker", Worker{}, plainSource{}, map[string]string{TransactionBoundary: "interval"}, TransactionBoundary, "does not have enabled"},
		{"interval boundary on an enabled worker", enabled, plainSource{}, map[string]string{TransactionBoundary: "interval"}, "", ""},
		{"poll boundary anywhere", Worker{}, plainSource{}, map[string]string{TransactionBoundary: "poll"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := ValidateExactlyOnce(tc.w, tc.conn, tc.config)
			if tc.key == "" {
				if ce != nil {
					t.Fatalf("refused: %v", ce)
				}
				return
			}
			if ce == nil || len(ce.Errors[tc.key]) == 0 {
				t.Fatalf("not refused on %s: %v", tc.key, ce)
			}
			if !strings.Contains(ce.Errors[tc.key][0], tc.says) {
				t.Fatalf("message %q does not say %q", ce.Errors[tc.key][0], tc.says)
			}
		})
	}
}

// An unknown boundary is refused by the key's definition, naming the
// values.
func TestUnknownTransactionBoundaryIsRefused(t *testing.T) {
	for _, cv := range ConfigDef(connectors.Source).Validate(map[string]string{TransactionBoundary: "sometimes", TransactionBoundaryIntervalMs: "-5"}) {
		switch cv.Name {
		case TransactionBoundary:
			if len(cv.Errors) == 0 || !strings.Contains(cv.Errors[0], "poll, interval, connector") {
				t.Errorf("transaction.boundary=sometimes: %v", cv.Errors)
			}
		case TransactionBoundaryIntervalMs:
			if len(cv.Errors) == 0 {
				t.Errorf("transaction.boundary.interval.ms=-5 accepted")
			}
		}
	}
}

func TestParseWorkerReadsExactlyOnceSourceSupport(t *testing.T) {
	for v, want := range map[string]ExactlyOnceMode{"disabled": ExactlyOnceDisabled, "Preparing": ExactlyOncePreparing, " ENABLED ": ExactlyOnceEnabled} {
		w, err := ParseWorker(map[string]string{WorkerExactlyOnceSourceSupport: v})
		if err != nil || w.ExactlyOnce != want {
			t.Errorf("%q: %v, %v", v, w.ExactlyOnce, err)
		}
	}
	if _, err := ParseWorker(map[string]string{WorkerExactlyOnceSourceSupport: "yes"}); err == nil || !strings.Contains(err.Error(), WorkerExactlyOnceSourceSupport) {
		t.Errorf("yes: %v", err)
	}
}

// ParseRuntime gives the task its boundary, and transactions only on an
// enabled worker.
func TestParseRuntimeReadsTheBoundary(t *testing.T) {
	cfg := map[string]string{TransactionBoundary: "Interval", TransactionBoundaryIntervalMs: "250"}
	r, err := ParseRuntime(Worker{ExactlyOnce: ExactlyOnceEnabled}, connectors.Source, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !r.ExactlyOnce.Enabled || r.ExactlyOnce.Boundary != BoundaryInterval || r.ExactlyOnce.Interval.Milliseconds() != 250 {
		t.Fatalf("%+v", r.ExactlyOnce)
	}
	if r, _ = ParseRuntime(Worker{ExactlyOnce: ExactlyOncePreparing}, connectors.Source, cfg); r.ExactlyOnce.Enabled {
		t.Fatal("transactions on a preparing worker")
	}
}

// A transactional producer must be idempotent with acks=all: on an enabled
// worker, a connector's or the worker's setting that turns that off is
// refused by name rather than overridden in silence.
func TestExactlyOnceRefusesNonIdempotentProducers(t *testing.T) {
	enabled := Worker{ExactlyOnce: ExactlyOnceEnabled}
	ce := ValidateExactlyOnce(enabled, plainSource{}, map[string]string{
		"producer.override.enable.idempotence": "false", "producer.override.acks": "1",
	})
	if ce == nil || len(ce.Errors["producer.override.enable.idempotence"]) == 0 || len(ce.Errors["producer.override.acks"]) == 0 {
		t.Fatalf("not refused: %v", ce)
	}
	if ce := ValidateExactlyOnce(enabled, plainSource{}, map[string]string{"producer.override.acks": "all"}); ce != nil {
		t.Fatalf("acks=all refused: %v", ce)
	}
	if ce := ValidateExactlyOnce(Worker{}, plainSource{}, map[string]string{"producer.override.acks": "1"}); ce != nil {
		t.Fatalf("acks=1 refused on an at-least-once worker: %v", ce)
	}
	_, err := ParseWorker(map[string]string{WorkerExactlyOnceSourceSupport: "enabled", "producer.enable.idempotence": "false"})
	if err == nil || !strings.Contains(err.Error(), "producer.enable.idempotence") {
		t.Fatalf("worker: %v", err)
	}
}

// An interval the transaction timeout would cut short can never commit.
func TestIntervalBeyondTheTransactionTimeoutIsRefused(t *testing.T) {
	enabled := Worker{ExactlyOnce: ExactlyOnceEnabled}
	cfg := map[string]string{TransactionBoundary: "interval", TransactionBoundaryIntervalMs: "60000"}
	if ce := ValidateExactlyOnce(enabled, plainSource{}, cfg); ce == nil || len(ce.Errors[TransactionBoundaryIntervalMs]) == 0 {
		t.Fatalf("60000 ms accepted: %v", ce)
	}
	cfg[TransactionBoundaryIntervalMs] = "59999"
	if ce := ValidateExactlyOnce(enabled, plainSource{}, cfg); ce != nil {
		t.Fatalf("59999 ms refused: %v", ce)
	}
}

// offsets.storage.topic gives a source its own offsets topic; a sink has
// no such key (Connect ignores it there).
func TestParseRuntimeReadsTheOffsetsTopic(t *testing.T) {
	cfg := map[string]string{OffsetsStorageTopic: " my-offsets "}
	r, err := ParseRuntime(Worker{}, connectors.Source, cfg)
	if err != nil || r.OffsetsTopic != "my-offsets" {
		t.Fatalf("%q, %v", r.OffsetsTopic, err)
	}
	if ce := Validate(Worker{}, connectors.Source, cfg); ce != nil {
		t.Fatalf("refused: %v", ce)
	}
	cfg[OffsetsStorageTopic] = ""
	if errs := ConfigDef(connectors.Source).Validate(cfg); !hasErrors(errs, OffsetsStorageTopic) {
		t.Fatal("an empty offsets.storage.topic accepted")
	}
}

func hasErrors(values []connectors.ConfigValue, key string) bool {
	for _, v := range values {
		if v.Name == key && len(v.Errors) > 0 {
			return true
		}
	}
	return false
}
