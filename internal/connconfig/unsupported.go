package connconfig

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// simpleHeaderConverter is Kafka Connect's default header converter, which
// this version does not have yet (it passes headers through as bytes when
// none is named).
var simpleHeaderConverter = []string{"org.apache.kafka.connect.storage.SimpleHeaderConverter", "SimpleHeaderConverter", "SimpleHeader"}

// validateHonoured refuses the keys Kafka Connect has, and that a config
// may carry, but that this version of Sluice would not honour as Connect
// does. Accepting them would make a config look accepted while it does
// something else than in Connect, so each is refused with a message that
// names it and says what to do instead.
func validateHonoured(t connectors.Type, config map[string]string, ce *connectors.ConfigError) {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if msg := unsupported(t, k, strings.TrimSpace(config[k])); msg != "" {
			ce.Add(k, msg)
		}
	}
}

// unsupported says why key k with value v cannot be honoured, or "".
func unsupported(t connectors.Type, k, v string) string {
	switch {
	case k == HeaderConverter && IsSimpleHeaderConverter(v):
		return fmt.Sprintf("SimpleHeaderConverter is not supported by this version of Sluice yet: without a %s, headers pass through as bytes (ByteArrayConverter). Name another converter or remove the key.", HeaderConverter)
	case t == connectors.Sink:
		return "" // the rest are source keys, which Connect ignores on sinks
	case k == ExactlyOnceSupport && strings.EqualFold(v, ExactlyOnceRequired):
		return "This worker does not provide exactly-once delivery for source connectors (exactly.once.source.support is not enabled in this version of Sluice). Use 'requested' or remove the key."
	case k == TransactionBoundary && v != "" && !strings.EqualFold(v, BoundaryPoll):
		return "Transaction boundaries apply to exactly-once source delivery, which this version of Sluice does not provide. Remove the key."
	case k == OffsetsStorageTopic && v != "":
		return "A connector-specific offsets topic is not supported by this version of Sluice: the connector's offsets would go to the worker's offsets topic. Remove the key."
	}
	return ""
}

// IsSimpleHeaderConverter reports whether class names Kafka Connect's
// SimpleHeaderConverter, which this version refuses by name (so that the
// converter lookup need not also call it unknown).
func IsSimpleHeaderConverter(class string) bool {
	return slices.Contains(simpleHeaderConverter, strings.TrimSpace(class))
}
