// Package configprovider is Kafka Connect's config providers (KIP-297,
// KIP-421): a worker's config.providers name providers, and the
// ${provider:path:key} placeholders in connector configs and in the
// worker's own keys are replaced by what those providers read, as Kafka's
// ConfigTransformer replaces them. Configs are stored and shown with
// their placeholders; only the worker that runs a connector or a task
// sees the values, when it starts it.
package configprovider

import (
	"fmt"
	"regexp"
	"slices"
	"sort"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
)

// Provider is Connect's ConfigProvider: the values of some keys at a path
// (a file, a directory, nothing for the environment).
type Provider interface {
	// Get returns the values of those of keys that path holds; a key it
	// does not hold is absent from the map, and its placeholder stays as
	// written, as in Connect. An error means path cannot be read at all;
	// it names the path and never holds a value.
	Get(path string, keys []string) (map[string]string, error)
}

// variablePattern is ConfigTransformer.DEFAULT_PATTERN,
// ${provider:[path:]key}. Go's regexp prefers, like java.util.regex, the
// leftmost match with lazy groups as short as they can be, so a value
// splits into the same provider, path and key as in Connect: the path
// ends at the first ':' after the provider, and the key takes the rest.
var variablePattern = regexp.MustCompile(`\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}`)

// variable is one placeholder of a value.
type variable struct {
	provider, path, key string
	text                string // the placeholder as written
}

func variables(value string) []variable {
	var out []variable
	for _, m := range variablePattern.FindAllStringSubmatch(value, -1) {
		// An absent path group is the empty path, as ConfigVariable's
		// EMPTY_PATH.
		out = append(out, variable{provider: m[1], path: m[3], key: m[4], text: m[0]})
	}
	return out
}

// HasVariables reports whether value holds a placeholder, whatever its
// provider: AbstractHerder.keysWithVariableValues' test.
func HasVariables(value string) bool { return variablePattern.MatchString(value) }

// Transformer replaces placeholders with the values its providers read:
// Kafka's ConfigTransformer over the providers a worker configures.
type Transformer struct {
	providers map[string]Provider
	log       zerolog.Logger
}

// NewTransformer makes a Transformer over providers by name; log gets a
// line for each placeholder that stays as written.
func NewTransformer(providers map[string]Provider, log zerolog.Logger) *Transformer {
	return &Transformer{providers: providers, log: log}
}

// Names are the configured providers' names, sorted.
func (t *Transformer) Names() []string {
	if t == nil {
		return nil
	}
	names := make([]string, 0, len(t.providers))
	for n := range t.providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Transform returns config with its placeholders replaced, as
// ConfigTransformer.transform does: each provider is asked once per path
// for every key the config's placeholders name there; a placeholder whose
// provider is not configured, or whose key the path does not hold, stays
// as written. A nil Transformer (no config.providers) changes nothing.
//
// When a provider cannot read a path, the error, a *connectors.ConfigError,
// names each config key whose value refers to that path, with the
// provider and the path, never a value; Connect fails the same way
// (a ConfigException from the provider).
func (t *Transformer) Transform(config map[string]string) (map[string]string, error) {
	if t == nil || len(t.providers) == 0 {
		return config, nil
	}
	type location struct{ provider, path string }
	wanted := map[location][]string{} // the keys to ask each location for
	usedBy := map[location][]string{} // the config keys that refer to each location
	for name, value := range config {
		for _, v := range variables(value) {
			loc := location{v.provider, v.path}
			if _, ok := t.providers[v.provider]; !ok {
				// Connect leaves it alone; say so, for it may be a typo.
				t.log.Warn().Str("key", name).Str("placeholder", v.text).Strs("config_providers", t.Names()).
					Msg("a placeholder names no configured config provider; it stays as written, as in Kafka Connect")
				continue
			}
			if !slices.Contains(wanted[loc], v.key) {
				wanted[loc] = append(wanted[loc], v.key)
			}
			if !slices.Contains(usedBy[loc], name) {
				usedBy[loc] = append(usedBy[loc], name)
			}
		}
	}
	if len(wanted) == 0 {
		return config, nil
	}
	found := map[location]map[string]string{}
	ce := &connectors.ConfigError{}
	for loc, keys := range wanted {
		sort.Strings(keys)
		data, err := t.providers[loc.provider].Get(loc.path, keys)
		if err != nil {
			for _, name := range usedBy[loc] {
				ce.Add(name, fmt.Sprintf("config provider %q: %v", loc.provider, err))
			}
			continue
		}
		found[loc] = data
	}
	if err := ce.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(config))
	for name, value := range config {
		out[name] = variablePattern.ReplaceAllStringFunc(value, func(text string) string {
			v := variables(text)[0]
			data, ok := found[location{v.provider, v.path}]
			if !ok {
				return text // not a configured provider (logged above)
			}
			resolved, ok := data[v.key]
			if !ok {
				t.log.Warn().Str("key", name).Str("placeholder", text).
					Msg("the config provider has no such key at that path; the placeholder stays as written, as in Kafka Connect")
				return text
			}
			return resolved
		})
	}
	return out, nil
}

// ReverseTransform puts the placeholders back into task configs computed
// from a resolved connector config, as Connect's
// AbstractHerder.reverseTransform does before it stores them: every key
// whose value in the connector's raw config holds a placeholder takes that
// raw value in each task config that has the key. Task configs are
// resolved again when their tasks start, so a secret the connector copied
// into its task configs is never stored in the config topic.
func ReverseTransform(raw map[string]string, taskConfigs []map[string]string) []map[string]string {
	var withVariables []string
	for k, v := range raw {
		if HasVariables(v) {
			withVariables = append(withVariables, k)
		}
	}
	if len(withVariables) == 0 {
		return taskConfigs
	}
	out := make([]map[string]string, len(taskConfigs))
	for i, tc := range taskConfigs {
		c := make(map[string]string, len(tc))
		for k, v := range tc {
			c[k] = v
		}
		for _, k := range withVariables {
			if _, ok := c[k]; ok {
				c[k] = raw[k]
			}
		}
		out[i] = c
	}
	return out
}
