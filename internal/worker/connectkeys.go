package worker

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/configprovider"
	"github.com/sluice-io/sluice/internal/connconfig"
	"github.com/sluice-io/sluice/internal/kafkasec"
	"github.com/sluice-io/sluice/internal/state"
)

// A worker's Props are Kafka Connect's distributed worker keys, from
// `sluice worker --config`, --prop or an embedding program. No key is
// accepted and then ignored in silence: each is
//
//   - honoured, as Connect honours it: workerKeys, the converter keys,
//     mappedKeys, and fixedKeys with the one value Sluice implements;
//   - ignored with a log line saying why, when it cannot change what the
//     worker does here (ignoredKeys: plugin.path, JMX metrics, client
//     tuning, ...);
//   - refused at start, every such key named at once, when Sluice cannot
//     honour it and it would change what the worker does (refusedKeys,
//     refusedPrefixes, and fixedKeys with another value);
//   - or unknown: logged once and ignored, as Connect ignores keys it does
//     not know.
//
// The README's table of worker keys says the same for operators; keep
// them in step.

// mappedKeys set typed Config fields (applyConnectKeys) where the field is
// unset: a flag, or an embedding program's field, wins over the key.
var mappedKeys = map[string]bool{
	"bootstrap.servers": true, "group.id": true, "listeners": true, "admin.listeners": true,
	"rest.advertised.host.name": true, "rest.advertised.port": true, "rest.advertised.listener": true,
	"task.shutdown.graceful.timeout.ms": true, "offset.flush.timeout.ms": true, "client.id": true,
	KeyGossipKey: true, KeyClusterTLSCert: true, KeyClusterTLSKey: true, KeyClusterTLSCA: true, KeyClusterTLSREST: true,
	KeyUIEnable: true,
}

// restKeys are the REST API's keys the worker honours (listeners.go,
// internal/basicauth, rest.CORS); java.security.auth.login.config is a JVM
// system property for Connect and a worker key here.
var restKeys = map[string]bool{
	"rest.extension.classes": true, "java.security.auth.login.config": true,
	"access.control.allow.origin": true, "access.control.allow.methods": true, "response.http.headers.config": true,
}

// fixedKey is a key Sluice honours with one behaviour only: the values
// that ask for it (compared without case) are taken, any other refused.
type fixedKey struct {
	values []string
	why    string
}

var fixedKeys = map[string]fixedKey{
	"scheduled.rebalance.max.delay.ms": {[]string{"0"}, "Sluice reassigns a departed worker's connectors and tasks at once, as 0 does " +
		"(gossip notices a dead worker within a second); the delayed reassignment of Connect's default (5 minutes) is not implemented: set 0 or remove the key"},
	"client.dns.lookup": {[]string{"use_all_dns_ips"}, "the worker's clients try every address a broker name resolves to (use_all_dns_ips)"},
}

// The reasons shared by several ignored keys.
const (
	whyClientTuning = "the worker's Kafka client (franz-go) keeps its own timeouts, buffers and backoffs"
	whyMetrics      = "Sluice serves its metrics at GET /metrics for Prometheus, with no JMX or metric reporters; its rates look back a fixed ~10 s"
	whyPlugins      = "connectors are compiled into the sluice binary: there are no plugins to load"
	whySigning      = "workers send each other control messages through their actor cluster, not signed REST requests"
	whySync         = "a Sluice worker whose view of the config topic lags keeps its membership and applies the configs as it reads them; it never leaves the group to resync"
	whyCleanup      = "the internal topics are always compacted (Connect ignores this key too)"
	whyRemovedREST  = "removed in Kafka Connect 3.0, which ignores it too: the REST API listens on listeners (default http://:8083)"
	whyRemovedConv  = "removed in Kafka Connect 3.0, which ignores it too: the internal topics' format is fixed"
	whyClientPrefix = "this worker-level client setting is not supported: under producer.*, consumer.* and admin.* Sluice takes the " +
		"security keys (security.protocol, sasl.*, ssl.*) and the settings a connector may override (README: Client overrides)"
)

var ignoredKeys = map[string]string{
	"plugin.path": whyPlugins, "plugin.discovery": whyPlugins,
	"metric.reporters": whyMetrics, "auto.include.jmx.reporter": whyMetrics, "metrics.sample.window.ms": whyMetrics,
	"metrics.num.samples": whyMetrics, "metrics.recording.level": whyMetrics,
	"metadata.max.age.ms": whyClientTuning, "send.buffer.bytes": whyClientTuning, "receive.buffer.bytes": whyClientTuning,
	"reconnect.backoff.ms": whyClientTuning, "reconnect.backoff.max.ms": whyClientTuning,
	"socket.connection.setup.timeout.ms": whyClientTuning, "socket.connection.setup.timeout.max.ms": whyClientTuning,
	"retry.backoff.ms": whyClientTuning, "retry.backoff.max.ms": whyClientTuning, "request.timeout.ms": whyClientTuning,
	"connections.max.idle.ms": whyClientTuning, "metadata.recovery.strategy": whyClientTuning,
	"worker.sync.timeout.ms": whySync, "worker.unsync.backoff.ms": whySync,
	"connect.protocol":                      "Sluice workers use their own incremental cooperative group protocol (protocol type sluice)",
	"inter.worker.key.generation.algorithm": whySigning, "inter.worker.key.size": whySigning, "inter.worker.key.ttl.ms": whySigning,
	"inter.worker.signature.algorithm": whySigning, "inter.worker.verification.algorithms": whySigning,
	"config.storage.partitions":     "the config topic always has 1 partition (Connect ignores this key too)",
	"config.storage.cleanup.policy": whyCleanup, "offset.storage.cleanup.policy": whyCleanup, "status.storage.cleanup.policy": whyCleanup,
	"rest.host.name": whyRemovedREST, "rest.port": whyRemovedREST,
	"internal.key.converter": whyRemovedConv, "internal.value.converter": whyRemovedConv,
}

var refusedKeys = map[string]string{
	"offset.storage.file.filename": "a standalone worker's key: Sluice runs distributed workers only (give group.id and the three storage topics)",
}

// refusedPrefixes are refused whatever follows them, after the keys above
// and the internal topics' own keys (topic, partitions, replication.factor)
// had their say.
var refusedPrefixes = []struct{ prefix, why string }{
	{"producer.", whyClientPrefix},
	{"consumer.", whyClientPrefix},
	{"admin.", whyClientPrefix},
	{"config.storage.", "settings of the internal topics other than topic, partitions and replication.factor are not supported yet"},
	{"offset.storage.", "settings of the internal topics other than topic, partitions and replication.factor are not supported yet"},
	{"status.storage.", "settings of the internal topics other than topic, partitions and replication.factor are not supported yet"},
}

// ignoredPrefixes are ignored with a log line, like ignoredKeys.
var ignoredPrefixes = []struct{ prefix, why string }{
	{"metrics.context.", whyMetrics},
	{"internal.key.converter.", whyRemovedConv},
	{"internal.value.converter.", whyRemovedConv},
}

// keyReport sorts Props by what the worker does with them.
type keyReport struct {
	refused map[string][]string // reason -> the keys (key=value for fixedKeys)
	ignored map[string]string   // key -> why it has no effect here
	unknown []string
}

// classifyKeys sorts props (see the comment at the top of this file).
func classifyKeys(props map[string]string) keyReport {
	r := keyReport{refused: map[string][]string{}, ignored: map[string]string{}}
	for k, v := range props {
		v = strings.TrimSpace(v)
		if f, ok := fixedKeys[k]; ok {
			if !slices.Contains(f.values, strings.ToLower(v)) {
				r.refused[f.why] = append(r.refused[f.why], k+"="+v)
			}
			continue
		}
		if why, ok := refusal(k, v); ok {
			r.refused[why] = append(r.refused[why], k)
			continue
		}
		if why, ok := ignoredKeys[k]; ok {
			r.ignored[k] = why
			continue
		}
		if why, ok := unlistedProvider(k, props); ok {
			r.ignored[k] = why
			continue
		}
		if honoured(k) {
			continue
		}
		if why, ok := byPrefix(k, ignoredPrefixes); ok {
			r.ignored[k] = why
			continue
		}
		if why, ok := byPrefix(k, refusedPrefixes); ok {
			r.refused[why] = append(r.refused[why], k)
			continue
		}
		r.unknown = append(r.unknown, k)
	}
	for _, keys := range r.refused {
		sort.Strings(keys)
	}
	sort.Strings(r.unknown)
	return r
}

// honoured reports whether the worker takes k as Connect does.
func honoured(k string) bool {
	if workerKeys[k] || mappedKeys[k] || restKeys[k] || isClientSecurityKey(k) || connconfig.IsWorkerClientKey(k) ||
		k == configprovider.ProvidersKey || strings.HasPrefix(k, configprovider.ProviderKeyPrefix) {
		return true
	}
	// The https listeners' TLS keys (listeners.go); other keys under these
	// prefixes are unknown to Connect too.
	if strings.HasPrefix(k, listenersHTTPSPrefix+"ssl.") || strings.HasPrefix(k, adminListenersHTTPSPrefix+"ssl.") {
		return true
	}
	for _, c := range []string{"key.converter", "value.converter", "header.converter"} {
		if k == c || strings.HasPrefix(k, c+".") {
			return true
		}
	}
	return false
}

// unlistedProvider is why a config.providers.<name>.* key has no effect:
// config.providers does not list <name>, and Connect builds only the
// providers it lists. The keys of listed providers are checked when the
// providers are built (configprovider.FromWorkerProps).
func unlistedProvider(k string, props map[string]string) (string, bool) {
	rest, ok := strings.CutPrefix(k, configprovider.ProviderKeyPrefix)
	if !ok {
		return "", false
	}
	// A name may hold dots (config.providers=my.vault): a key belongs to
	// a listed name it starts with.
	for _, name := range configprovider.ListedProviders(props) {
		if strings.HasPrefix(rest, name+".") {
			return "", false
		}
	}
	name, _, _ := strings.Cut(rest, ".")
	return fmt.Sprintf("config.providers does not list the provider %q (it lists %q), so it is not built, as in Kafka Connect", name, strings.TrimSpace(props[configprovider.ProvidersKey])), true
}

// refusal is the reason an otherwise honoured or known key is refused
// with this value.
func refusal(k, _ string) (string, bool) {
	if why, ok := refusedKeys[k]; ok && !workerKeys[k] {
		return why, true
	}
	return "", false
}

// isClientSecurityKey reports whether k is a Kafka client security key
// (security.protocol, sasl.*, ssl.*), unprefixed or under producer.,
// consumer. or admin. (security.go checks their values).
func isClientSecurityKey(k string) bool {
	for _, kind := range kafkasec.ClientKinds {
		if name, ok := strings.CutPrefix(k, kind+"."); ok {
			return kafkasec.IsSecurityKey(name)
		}
	}
	return kafkasec.IsSecurityKey(k)
}

func byPrefix(k string, rules []struct{ prefix, why string }) (string, bool) {
	for _, r := range rules {
		if strings.HasPrefix(k, r.prefix) {
			return r.why, true
		}
	}
	return "", false
}

// err describes every refused key at once, a line per reason.
func (r keyReport) err() error {
	if len(r.refused) == 0 {
		return nil
	}
	lines := make([]string, 0, len(r.refused))
	for why, keys := range r.refused {
		lines = append(lines, strings.Join(keys, ", ")+": "+why)
	}
	sort.Strings(lines)
	return fmt.Errorf("Kafka Connect worker key(s) Sluice cannot honour (remove them or change their values; the README's table of worker keys lists what is taken):\n  %s",
		strings.Join(lines, "\n  "))
}

// log writes a line for each key the worker ignores, once, at start.
func (r keyReport) log(log zerolog.Logger) {
	for _, k := range slices.Sorted(maps.Keys(r.ignored)) {
		log.Info().Str("key", k).Str("why", r.ignored[k]).Msg("ignoring a Kafka Connect worker key that has no effect in Sluice")
	}
	for _, k := range r.unknown {
		log.Warn().Str("key", k).Msg("ignoring an unknown worker key (Kafka Connect ignores unknown keys too)")
	}
}

// applyConnectKeys takes Kafka Connect's worker keys from Props where the
// typed field is unset, so a connect-distributed properties file's
// settings carry over. It refuses the keys Sluice cannot honour and the
// values it cannot parse, naming every one in one error.
func (c *Config) applyConnectKeys() error {
	errs := []error{classifyKeys(c.Props).err()}
	p := func(key string) string { return strings.TrimSpace(c.Props[key]) }
	str := func(key string, dst *string) {
		if v := p(key); v != "" && *dst == "" {
			*dst = v
		}
	}
	str("group.id", &c.Cluster)
	if v := p("bootstrap.servers"); v != "" && len(c.Bootstrap) == 0 {
		c.Bootstrap = connectors.SplitList(v)
	}
	str("config.storage.topic", &c.ConfigTopic)
	str("offset.storage.topic", &c.OffsetsTopic)
	str("status.storage.topic", &c.StatusTopic)
	str("client.id", &c.ClientID)
	str("rest.advertised.host.name", &c.RESTAdvertisedHost)
	errs = append(errs, c.applyListeners(), c.applyClusterKeys(), c.applyUIKey())
	num := func(key string, bits int, min int64, set func(int64)) {
		v := p(key)
		if v == "" {
			return
		}
		n, err := strconv.ParseInt(v, 10, bits)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %q is not a number", key, v))
		case n < min:
			errs = append(errs, fmt.Errorf("%s: %d is below %d", key, n, min))
		default:
			set(n)
		}
	}
	unset32 := func(dst *int32) func(int64) {
		return func(n int64) {
			if *dst == 0 {
				*dst = int32(n)
			}
		}
	}
	millis := func(dst *time.Duration) func(int64) {
		return func(n int64) {
			if *dst == 0 {
				*dst = time.Duration(n) * time.Millisecond
			}
		}
	}
	num("rest.advertised.port", 32, 1, func(n int64) {
		if n > 65535 {
			errs = append(errs, fmt.Errorf("rest.advertised.port: %d is not a port", n))
		} else if c.RESTAdvertisedPort == 0 {
			c.RESTAdvertisedPort = int(n)
		}
	})
	num("offset.storage.partitions", 32, 1, unset32(&c.OffsetsPartitions))
	num("status.storage.partitions", 32, 1, unset32(&c.StatusPartitions))
	num("offset.flush.interval.ms", 64, 1, millis(&c.OffsetFlushInterval))
	num("offset.flush.timeout.ms", 64, 1, millis(&c.OffsetFlushTimeout))
	num("task.shutdown.graceful.timeout.ms", 64, 1, millis(&c.ShutdownTimeout))
	num("session.timeout.ms", 64, 1, millis(&c.SessionTimeout))
	num("heartbeat.interval.ms", 64, 1, millis(&c.HeartbeatInterval))
	num("rebalance.timeout.ms", 64, 1, millis(&c.RebalanceTimeout))
	errs = append(errs, c.applyReplicationFactor(num))
	session, heartbeat := cmp.Or(c.SessionTimeout, 10*time.Second), cmp.Or(c.HeartbeatInterval, time.Second)
	if heartbeat >= session {
		errs = append(errs, fmt.Errorf("heartbeat.interval.ms (%v) must be below session.timeout.ms (%v)", heartbeat, session))
	}
	if _, err := state.ParseTopicTracking(c.Props); err != nil {
		errs = append(errs, err)
	}
	if _, err := loadSecurity(c.Props); err != nil {
		errs = append(errs, err)
	}
	if _, err := connconfig.ParseWorker(c.Props); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// applyReplicationFactor takes *.storage.replication.factor. One
// replication factor serves the three internal topics: differing values
// could not be honoured, so they are refused.
func (c *Config) applyReplicationFactor(num func(key string, bits int, min int64, set func(int64))) error {
	var factors []string
	var bad error
	for _, k := range []string{"config.storage.replication.factor", "offset.storage.replication.factor", "status.storage.replication.factor"} {
		if v := strings.TrimSpace(c.Props[k]); v != "" && !slices.Contains(factors, v) {
			factors = append(factors, v)
		}
		num(k, 16, -1, func(n int64) {
			if n == 0 {
				bad = fmt.Errorf("%s: 0 is not a replication factor (-1 takes the broker's default)", k)
			} else if c.ReplicationFactor == 0 {
				c.ReplicationFactor = int16(n)
			}
		})
	}
	if len(factors) > 1 {
		return fmt.Errorf("config.storage.replication.factor, offset.storage.replication.factor and status.storage.replication.factor differ (%s): Sluice creates its internal topics with one replication factor; give them the same value", strings.Join(factors, ", "))
	}
	return bad
}
