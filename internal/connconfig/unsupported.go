package connconfig

import (
	"sort"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

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
	case t == connectors.Sink:
		return "" // the rest are source keys, which Connect ignores on sinks
	case k == OffsetsStorageTopic && v != "":
		return "A connector-specific offsets topic is not supported by this version of Sluice: the connector's offsets would go to the worker's offsets topic. Remove the key."
	}
	return ""
}
