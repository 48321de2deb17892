package connconfig

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/kafkasec"
)

// Client override prefixes (KIP-458): per-connector settings of the Kafka
// clients the worker makes for a connector.
const (
	ProducerOverridePrefix = "producer.override."
	ConsumerOverridePrefix = "consumer.override."
	AdminOverridePrefix    = "admin.override."
)

// principalKeys are the overrides Connect's Principal policy allows.
var principalKeys = []string{"sasl.jaas.config", "sasl.mechanism", "security.protocol"}

// allows reports whether policy p lets a connector override key (without
// its prefix), as Connect's policies decide.
func (p OverridePolicy) allows(key string) bool {
	switch p {
	case PolicyNone:
		return false
	case PolicyPrincipal:
		return slices.Contains(principalKeys, key)
	}
	return true
}

// Overrides are a connector's client overrides, parsed. Each client's
// options are applied after the worker's own, so an override wins, as in
// Connect where the connector's overrides are put last.
type Overrides struct {
	// Producer is producer.override.*: the producer of a source's records,
	// and of a sink's dead letter queue.
	Producer ProducerOverrides
	// Consumer is consumer.override.*: a sink task's consumer.
	Consumer ConsumerOverrides
	// Admin is admin.override.*: the admin client that creates a source's
	// topics (topic creation) and a sink's dead letter queue topic.
	Admin AdminOverrides
}

// ClientOverrides are one client's overrides.
type ClientOverrides struct {
	// Keys are the overridden keys, without their prefix, and their values
	// as the config has them; empty when nothing is overridden.
	Keys map[string]string
	// Opts carry them out in franz-go, to apply after the worker's options.
	Opts []kgo.Opt
	// Security, when the connector overrides a security key
	// (security.protocol, sasl.*, ssl.*), is the client's TLS and SASL:
	// the worker's security keys for this kind of client with the
	// overrides over them; nil when nothing is overridden. It replaces the
	// worker's security options rather than follows them: franz-go adds up
	// SASL mechanisms, it does not replace one with another.
	Security *kafkasec.Settings
}

// Set reports whether the connector overrides anything of this client.
func (c ClientOverrides) Set() bool { return len(c.Keys) > 0 }

// Canonical is the overrides as one string, equal for equal overrides:
// what tells apart two clients made for one connector.
func (c ClientOverrides) Canonical() string {
	keys := make([]string, 0, len(c.Keys))
	for k := range c.Keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, c.Keys[k])
	}
	return b.String()
}

// ProducerOverrides are the overrides of a producer (or a worker's
// producer.* keys).
type ProducerOverrides struct {
	ClientOverrides
	// BufferMemory is buffer.memory: the most bytes of a source task's
	// records handed to the producer and not yet acknowledged (the runtime
	// bounds it, not franz-go, which bounds its buffer by records); 0 when
	// not set. Not a client option: a connector that overrides only
	// buffer.memory shares the worker's producer.
	BufferMemory int64
}

// Set reports whether the connector overrides a setting of the producer
// client itself, and so needs a producer of its own.
func (c ProducerOverrides) Set() bool {
	_, buffer := c.Keys[bufferMemory]
	return len(c.Keys) > 0 && !(buffer && len(c.Keys) == 1)
}

// Canonical is ClientOverrides.Canonical without buffer.memory: two
// configs that differ only in it can share a producer.
func (c ProducerOverrides) Canonical() string {
	if _, buffer := c.Keys[bufferMemory]; !buffer {
		return c.ClientOverrides.Canonical()
	}
	keys := maps.Clone(c.Keys)
	delete(keys, bufferMemory)
	return ClientOverrides{Keys: keys}.Canonical()
}

// ConsumerOverrides are a sink's consumer overrides.
type ConsumerOverrides struct {
	ClientOverrides
	// MaxPollRecords is max.poll.records, the most records one Write gets;
	// 0 when not overridden.
	MaxPollRecords int
	// NoReset is auto.offset.reset=none: a partition with no committed
	// offset, or whose committed offset is out of range, fails the task
	// (Connect's consumer throws from poll, which fails the task).
	NoReset bool
}

// AdminOverrides are the overrides of a connector's admin client.
type AdminOverrides struct {
	ClientOverrides
	// RequestTimeout is request.timeout.ms in milliseconds, also the
	// timeout admin requests carry (kadm's SetTimeoutMillis); 0 when not
	// overridden.
	RequestTimeout int32
}

// usesClients says which clients Connect makes for a connector of type t
// with config, and so whose overrides it checks (AbstractHerder's
// connectorUsesProducer, connectorUsesConsumer, connectorUsesAdmin). The
// overrides of a client a connector does not have are ignored, as in
// Connect: a source has no consumer, a sink without a dead letter queue no
// producer.
func usesClients(t connectors.Type, config map[string]string) (producer, consumer, admin bool) {
	dlq := strings.TrimSpace(config[DLQTopicName]) != ""
	switch t {
	case connectors.Source:
		return true, false, usesTopicCreation(config)
	case connectors.Sink:
		return dlq, true, dlq
	}
	return false, false, false
}

// overrideKeys returns the keys of config under prefix, without it.
func overrideKeys(config map[string]string, prefix string) map[string]string {
	var out map[string]string
	for k, v := range config {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}

// parseOverrides parses the client overrides of a connector of type t,
// adding an error that names the key for each one the worker's policy does
// not allow, Sluice cannot honour, or whose value is bad.
func parseOverrides(w Worker, t connectors.Type, config map[string]string, ce *connectors.ConfigError) Overrides {
	var o Overrides
	producer, consumer, admin := usesClients(t, config)
	if producer {
		if keys := allowed(w, ProducerOverridePrefix, overrideKeys(config, ProducerOverridePrefix), ce); keys != nil {
			o.Producer = parseProducer(ProducerOverridePrefix, keys, ce)
			o.Producer.Security = securityOverrides(w, kafkasec.Producer, ProducerOverridePrefix, keys, ce)
		}
	}
	if consumer {
		keys := allowed(w, ConsumerOverridePrefix, overrideKeys(config, ConsumerOverridePrefix), ce)
		if keys != nil {
			o.Consumer = parseConsumer(ConsumerOverridePrefix, keys, ce)
			o.Consumer.Security = securityOverrides(w, kafkasec.Consumer, ConsumerOverridePrefix, keys, ce)
		}
		// What the connector does not override, the worker's consumer.*
		// keys set (their options come before the overrides' anyway).
		if o.Consumer.MaxPollRecords == 0 {
			o.Consumer.MaxPollRecords = w.Clients.Consumer.MaxPollRecords
		}
		if _, set := keys["auto.offset.reset"]; !set {
			o.Consumer.NoReset = w.Clients.Consumer.NoReset
		}
	}
	if admin {
		if keys := allowed(w, AdminOverridePrefix, overrideKeys(config, AdminOverridePrefix), ce); keys != nil {
			o.Admin = parseAdmin(AdminOverridePrefix, keys, ce)
			o.Admin.Security = securityOverrides(w, kafkasec.Admin, AdminOverridePrefix, keys, ce)
		}
		if o.Admin.RequestTimeout == 0 {
			o.Admin.RequestTimeout = w.Clients.Admin.RequestTimeout
		}
	}
	return o
}

// securityOverrides returns the security of a client whose connector
// overrides security keys (nil when it overrides none, or on an error,
// which names the key). The overrides apply over the security the worker
// gives that kind of client, as Connect puts a connector's overrides over
// the worker's client config.
func securityOverrides(w Worker, kind, prefix string, keys map[string]string, ce *connectors.ConfigError) *kafkasec.Settings {
	overridden := false
	for k := range keys {
		overridden = overridden || kafkasec.IsSecurityKey(k)
	}
	if !overridden {
		return nil
	}
	s, err := kafkasec.Load(kafkasec.Merge(w.ClientSecurity[kind], keys))
	if err != nil {
		// kafkasec's errors start with the key they are about.
		key, _, _ := strings.Cut(err.Error(), ":")
		if _, ok := keys[key]; !ok {
			key = "security.protocol"
		}
		ce.Add(prefix+key, err.Error())
		return nil
	}
	return s
}

// allowed applies the worker's policy to keys, with Connect's message for
// each key it refuses, and returns those it allows (nil for none), which
// are then checked for what Sluice can honour.
func allowed(w Worker, prefix string, keys map[string]string, ce *connectors.ConfigError) map[string]string {
	p := w.policy()
	var out map[string]string
	for k, v := range keys {
		if !p.allows(k) {
			ce.Add(prefix+k, fmt.Sprintf("The '%s' policy does not allow '%s' to be overridden in the connector configuration.", p, k))
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// overrideParser reads one client's override keys. Each key's parse
// method records its value (or an error naming the key); what needs
// several keys is checked after.
type overrideParser struct {
	prefix, client string
	keys           map[string]string
	ce             *connectors.ConfigError
	opts           []kgo.Opt
	bad            bool
}

func (p *overrideParser) fail(key, format string, args ...any) {
	p.bad = true
	p.ce.Add(p.prefix+key, fmt.Sprintf(format, args...))
}

// invalid reports a bad value as the other connector keys do.
func (p *overrideParser) invalid(key, reason string) {
	p.fail(key, "Invalid value %q for configuration %s: %s", p.keys[key], p.prefix+key, reason)
}

// refuse reports a key this version cannot honour. why, when not empty,
// says why and what to do; otherwise a generic reason is given.
func (p *overrideParser) refuse(key, why string) {
	if why == "" {
		why = fmt.Sprintf("the %s Sluice makes (franz-go) has no setting that honours it as Kafka's Java client does", p.client)
	}
	p.fail(key, "%s cannot be overridden in this version of Sluice: %s. Remove the key.", p.prefix+key, why)
}

// refused are the keys refused with a reason of their own, whatever the
// client, because operators set them and deserve to know why.
var refused = map[string]string{
	"bootstrap.servers": "a connector's clients talk to the worker's Kafka cluster, where its offsets, configs and status live",
}

// refuseUnknown refuses every key not in known, with the reason special or
// refused gives for it, if any. The security keys are securityOverrides'.
func (p *overrideParser) refuseUnknown(known []string, special map[string]string) {
	for _, k := range sortedKeys(p.keys) {
		if slices.Contains(known, k) || kafkasec.IsSecurityKey(k) {
			continue
		}
		why, ok := special[k]
		if !ok {
			why = refused[k]
		}
		p.refuse(k, why)
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
