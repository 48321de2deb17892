package connconfig

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-io/sluice/connectors"
)

// ExactlyOnce is how a source task delivers, from the worker's
// exactly.once.source.support and the connector's transaction.boundary
// keys.
type ExactlyOnce struct {
	// Enabled is true when the task writes its records and offsets in
	// transactions (the worker's exactly.once.source.support=enabled).
	Enabled bool
	// Boundary is transaction.boundary, lower case: poll, interval or
	// connector.
	Boundary string
	// Interval is transaction.boundary.interval.ms; 0 when unset, which
	// means the worker's offset.flush.interval.ms.
	Interval time.Duration
}

// TransactionTimeout is transaction.timeout.ms of an exactly-once source
// task's producer: Kafka's producer default, which Connect keeps. A
// transaction open longer than this is aborted by the broker.
const TransactionTimeout = 60 * time.Second

// The messages of Connect's DistributedHerder for the preflight checks,
// with what to do added where Connect's says nothing.
const (
	msgWorkerNotEnabled = "This worker does not have exactly-once source support enabled " +
		"(set exactly.once.source.support=enabled on every worker, or use 'requested')."
	msgNoPreflightAPI = "The connector does not implement the API required for preflight validation of exactly-once " +
		"source support. Please consult the documentation for the connector to determine whether it supports " +
		"exactly-once semantics, and then consider reconfiguring the connector to use the value \"requested\" for " +
		"this property (which will disable this preflight check and allow the connector to be created)."
	msgUnsupported       = "The connector does not support exactly-once semantics with the provided configuration."
	msgBoundaryUndefined = "The connector does not support connector-defined transaction boundaries with the given " +
		"configuration. Please reconfigure it to use a different transaction boundary definition."
	msgBoundaryNotEnabled = "Transaction boundaries apply to exactly-once source delivery, which this worker does not " +
		"have enabled (exactly.once.source.support=enabled). Use 'poll' or remove the key."
)

// ValidateExactlyOnce runs Connect's preflight checks of a source
// connector's exactly-once keys against the worker w and the connector
// instance conn (which may implement connectors.ExactlyOnceSource and
// connectors.TransactionBoundaryDefiner): exactly.once.support=required
// needs an enabled worker and a connector that says it supports exactly
// once with config; transaction.boundary=connector needs a connector that
// can define boundaries. Other boundaries than poll need an enabled worker:
// Connect ignores them elsewhere, which Sluice refuses to do in silence. The
// values themselves are ConfigDef's to check.
func ValidateExactlyOnce(w Worker, conn connectors.Connector, config map[string]string) *connectors.ConfigError {
	ce := &connectors.ConfigError{}
	if strings.EqualFold(strings.TrimSpace(config[ExactlyOnceSupport]), ExactlyOnceRequired) {
		eos, ok := conn.(connectors.ExactlyOnceSource)
		switch {
		case !w.ExactlyOnceEnabled():
			ce.Add(ExactlyOnceSupport, msgWorkerNotEnabled)
		case !ok:
			ce.Add(ExactlyOnceSupport, msgNoPreflightAPI)
		case !eos.ExactlyOnceSupport(config):
			ce.Add(ExactlyOnceSupport, msgUnsupported)
		}
	}
	if w.ExactlyOnceEnabled() {
		refuseNonIdempotent(config, ProducerOverridePrefix, ce)
	}
	if v, ok := config[TransactionBoundaryIntervalMs]; ok {
		if ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && ms >= TransactionTimeout.Milliseconds() {
			ce.Add(TransactionBoundaryIntervalMs, fmt.Sprintf("must be below the transaction timeout (%d ms, transaction.timeout.ms, "+
				"which Sluice does not let a connector change): the broker would abort every transaction before it commits",
				TransactionTimeout.Milliseconds()))
		}
	}
	boundary := strings.ToLower(strings.TrimSpace(config[TransactionBoundary]))
	switch {
	case boundary == "" || boundary == BoundaryPoll:
	case !w.ExactlyOnceEnabled():
		ce.Add(TransactionBoundary, msgBoundaryNotEnabled)
	case boundary == BoundaryConnector && !CanDefineTransactionBoundaries(conn, config):
		ce.Add(TransactionBoundary, msgBoundaryUndefined)
	}
	if len(ce.Errors) == 0 {
		return nil
	}
	return ce
}

// msgNeedsIdempotence says why a transactional producer refuses a setting.
const msgNeedsIdempotence = "exactly-once source tasks produce in transactions, which need the idempotent producer " +
	"with acks=all (Connect overrides this setting for them; Sluice refuses it rather than ignore it)"

// refuseNonIdempotent adds an error for each of prefix+enable.idempotence
// and prefix+acks in props that would turn the idempotent producer off.
func refuseNonIdempotent(props map[string]string, prefix string, ce *connectors.ConfigError) {
	if v, ok := props[prefix+"enable.idempotence"]; ok && strings.EqualFold(strings.TrimSpace(v), "false") {
		ce.Add(prefix+"enable.idempotence", msgNeedsIdempotence)
	}
	if v, ok := props[prefix+"acks"]; ok {
		if acks := strings.TrimSpace(v); acks != "all" && acks != "-1" {
			ce.Add(prefix+"acks", msgNeedsIdempotence)
		}
	}
}

// CanDefineTransactionBoundaries reports whether conn says its tasks can
// define their transactions with config. The plugin gets a copy: config may
// be the config log's shared map (state.ConfigLog.Snapshot).
func CanDefineTransactionBoundaries(conn connectors.Connector, config map[string]string) bool {
	d, ok := conn.(connectors.TransactionBoundaryDefiner)
	return ok && d.CanDefineTransactionBoundaries(maps.Clone(config))
}
