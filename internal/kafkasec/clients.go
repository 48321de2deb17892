package kafkasec

import (
	"maps"
	"strings"
)

// The kinds of client a worker makes, by the prefix of their worker keys.
const (
	// Worker is the worker's own clients: its group membership and its
	// config, offsets and status topics. They take the unprefixed keys.
	Worker = ""
	// Producer, Consumer and Admin are the clients a worker makes for its
	// connectors: the keys prefixed producer., consumer. and admin. win over
	// the unprefixed ones.
	Producer = "producer"
	Consumer = "consumer"
	Admin    = "admin"
)

// ClientKinds are the prefixed client kinds.
var ClientKinds = []string{Producer, Consumer, Admin}

// ClientProps returns the security keys a client of kind takes from a
// worker's properties: the unprefixed ones, with the kind's prefixed ones
// (producer.ssl.truststore.location, ...) over them.
//
// Connect's admin clients do take the unprefixed keys too, but its
// producers and consumers take only their prefixed keys and would connect
// with PLAINTEXT to a cluster the worker reaches over SASL_SSL. Sluice lets
// every client start from the worker's security, so one set of keys
// secures everything; a connect-distributed.properties that repeats them
// under producer. and consumer. (as Connect needs) works unchanged.
func ClientProps(workerProps map[string]string, kind string) map[string]string {
	out := map[string]string{}
	for k, v := range workerProps {
		if IsSecurityKey(k) {
			out[k] = v
		}
	}
	if kind == Worker {
		return out
	}
	for k, v := range workerProps {
		if name, ok := strings.CutPrefix(k, kind+"."); ok && IsSecurityKey(name) {
			out[name] = v
		}
	}
	return out
}

// Merge returns base with overrides over it, for a connector's
// producer.override.* (and consumer., admin.) security keys.
func Merge(base, overrides map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range overrides {
		if IsSecurityKey(k) {
			out[k] = v
		}
	}
	return out
}
