package connconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/kafkasec"
)

// Worker keys that change how connector configs are validated and run.
const (
	// WorkerOverridePolicy is Kafka Connect's
	// connector.client.config.override.policy: which client overrides
	// (producer.override.*, consumer.override.*, admin.override.*) a
	// connector may set (KIP-458).
	WorkerOverridePolicy = "connector.client.config.override.policy"
	// WorkerTopicCreationEnable is Kafka Connect's topic.creation.enable:
	// whether source connectors with topic.creation.* keys create the
	// topics they write to (KIP-158).
	WorkerTopicCreationEnable = "topic.creation.enable"
	// WorkerExactlyOnceSourceSupport is Kafka Connect's
	// exactly.once.source.support (KIP-618): disabled, preparing (fence
	// zombies without transactions, the rolling upgrade's middle step) or
	// enabled.
	WorkerExactlyOnceSourceSupport = "exactly.once.source.support"
)

// ExactlyOnceMode is a value of exactly.once.source.support.
type ExactlyOnceMode string

// The values of exactly.once.source.support; "" means Disabled.
const (
	ExactlyOnceDisabled  ExactlyOnceMode = "disabled"
	ExactlyOncePreparing ExactlyOnceMode = "preparing"
	ExactlyOnceEnabled   ExactlyOnceMode = "enabled"
)

// Fences reports whether the leader fences a source connector's previous
// generation of tasks before the next starts (preparing and enabled).
func (m ExactlyOnceMode) Fences() bool { return m == ExactlyOncePreparing || m == ExactlyOnceEnabled }

// OverridePolicy is a value of connector.client.config.override.policy.
type OverridePolicy string

// The policies Kafka Connect ships. All is Connect's default since 3.0.
const (
	PolicyAll       OverridePolicy = "All"
	PolicyNone      OverridePolicy = "None"
	PolicyPrincipal OverridePolicy = "Principal"
)

// policyPackage is where Connect's policy classes live: a worker config
// may name a policy by its alias, its simple class name or its full one.
const policyPackage = "org.apache.kafka.connect.connector.policy."

// Worker is what validating and running a connector config needs of the
// worker's own config. The zero value is Connect's defaults: policy All,
// topic creation enabled.
type Worker struct {
	// OverridePolicy governs client overrides; "" means PolicyAll.
	OverridePolicy OverridePolicy
	// TopicCreationDisabled is topic.creation.enable=false: source
	// connectors then never create topics, whatever their topic.creation.*
	// keys say (Connect ignores those keys then).
	TopicCreationDisabled bool
	// Clients are the worker's producer.*, consumer.* and admin.* keys
	// other than the security keys: the settings of the clients the worker
	// makes for its connectors, which a connector's overrides apply over.
	Clients WorkerClients
	// ClientSecurity is, per client kind (kafkasec.Producer, Consumer,
	// Admin), the security keys the worker gives that kind of client
	// (kafkasec.ClientProps): a connector's security overrides apply over
	// them. No keys means PLAINTEXT.
	ClientSecurity map[string]map[string]string
	// ExactlyOnce is exactly.once.source.support; "" is disabled.
	ExactlyOnce ExactlyOnceMode
}

// ExactlyOnceEnabled reports whether source tasks run in transactions.
func (w Worker) ExactlyOnceEnabled() bool { return w.ExactlyOnce == ExactlyOnceEnabled }

// policy is the effective override policy.
func (w Worker) policy() OverridePolicy {
	if w.OverridePolicy == "" {
		return PolicyAll
	}
	return w.OverridePolicy
}

// ParseWorker reads the worker keys of Worker from a worker's properties, as
// Connect does: the policy by alias or class name, topic.creation.enable
// as a boolean in any case. Absent keys take Connect's defaults. The error
// names every bad key.
func ParseWorker(props map[string]string) (Worker, error) {
	var w Worker
	var errs []error
	if v, ok := props[WorkerOverridePolicy]; ok {
		p, err := ParseOverridePolicy(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", WorkerOverridePolicy, err))
		}
		w.OverridePolicy = p
	}
	if v, ok := props[WorkerTopicCreationEnable]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
		case "false":
			w.TopicCreationDisabled = true
		default:
			errs = append(errs, fmt.Errorf("%s: invalid value %q: expected true or false", WorkerTopicCreationEnable, v))
		}
	}
	if v, ok := props[WorkerExactlyOnceSourceSupport]; ok {
		// Connect compares the value without case.
		switch m := ExactlyOnceMode(strings.ToLower(strings.TrimSpace(v))); m {
		case ExactlyOnceDisabled, ExactlyOncePreparing, ExactlyOnceEnabled:
			w.ExactlyOnce = m
		default:
			errs = append(errs, fmt.Errorf("%s: invalid value %q: expected disabled, preparing or enabled", WorkerExactlyOnceSourceSupport, v))
		}
	}
	clients := &connectors.ConfigError{}
	if w.ExactlyOnceEnabled() {
		// The worker's producer.* keys apply to the source tasks'
		// transactional producers too.
		refuseNonIdempotent(props, "producer.", clients)
	}
	w.Clients.Producer = parseProducer("producer.", workerClientKeys(props, "producer."), clients)
	w.Clients.Consumer = parseConsumer("consumer.", workerClientKeys(props, "consumer."), clients)
	w.Clients.Admin = parseAdmin("admin.", workerClientKeys(props, "admin."), clients)
	if err := clients.Err(); err != nil {
		errs = append(errs, err)
	}
	w.ClientSecurity = map[string]map[string]string{}
	for _, kind := range kafkasec.ClientKinds {
		w.ClientSecurity[kind] = kafkasec.ClientProps(props, kind)
	}
	return w, errors.Join(errs...)
}

// WorkerClients are a worker's settings of its connectors' clients.
type WorkerClients struct {
	Producer ProducerOverrides
	Consumer ConsumerOverrides
	Admin    AdminOverrides
}

// IsWorkerClientKey reports whether a worker key is a producer.*,
// consumer.* or admin.* setting ParseWorker honours (the security keys
// under those prefixes are kafkasec's).
func IsWorkerClientKey(k string) bool {
	for prefix, known := range map[string][]string{"producer.": producerKeys, "consumer.": consumerKeys, "admin.": adminKeys} {
		if name, ok := strings.CutPrefix(k, prefix); ok && slices.Contains(known, name) {
			return true
		}
	}
	return false
}

// workerClientKeys are the keys of props under prefix that
// IsWorkerClientKey takes, without the prefix; nil when there are none.
// The worker refuses the others by name (internal/worker/connectkeys.go).
func workerClientKeys(props map[string]string, prefix string) map[string]string {
	var out map[string]string
	for k, v := range overrideKeys(props, prefix) {
		if !IsWorkerClientKey(prefix + k) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// ParseOverridePolicy reads a connector.client.config.override.policy
// value: All, None or Principal, or the name of Connect's class for it
// (AllConnectorClientConfigOverridePolicy, with or without its package).
// Custom policy classes cannot be loaded by Sluice and are refused.
func ParseOverridePolicy(v string) (OverridePolicy, error) {
	name := strings.TrimPrefix(strings.TrimSpace(v), policyPackage)
	name = strings.TrimSuffix(name, "ConnectorClientConfigOverridePolicy")
	for _, p := range []OverridePolicy{PolicyAll, PolicyNone, PolicyPrincipal} {
		if name == string(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("invalid value %q: must be All, None or Principal (or the name of Kafka Connect's class for one of them); Sluice cannot load other policy classes", v)
}
