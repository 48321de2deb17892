package kafkasec

import "github.com/sluice-io/sluice/internal/jaas"

// JAASEntry is one login module entry of sasl.jaas.config.
type JAASEntry = jaas.Entry

// ParseJAAS parses a sasl.jaas.config value as Kafka's JaasConfig does
// (see jaas.ParseEntries, which the REST listener's JAAS file shares).
func ParseJAAS(text string) ([]JAASEntry, error) { return jaas.ParseEntries(text) }
