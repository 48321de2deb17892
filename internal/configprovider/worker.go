package configprovider

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/rs/zerolog"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/javaregex"
)

// The worker keys that configure providers.
const (
	ProvidersKey = "config.providers"
	// ProviderKeyPrefix starts config.providers.<name>.class and
	// config.providers.<name>.param.<option>.
	ProviderKeyPrefix = ProvidersKey + "."
)

// classes are the providers Sluice has, by Connect class name, each with
// the options it takes and how it is built from them.
var classes = map[string]struct {
	options []string
	build   func(prefix string, params map[string]string) (Provider, error)
}{
	FileClass: {[]string{AllowedPathsOption}, func(prefix string, params map[string]string) (Provider, error) {
		allowed, err := ParseAllowedPaths(prefix+AllowedPathsOption, params[AllowedPathsOption])
		return NewFileProvider(allowed), err
	}},
	DirectoryClass: {[]string{AllowedPathsOption}, func(prefix string, params map[string]string) (Provider, error) {
		allowed, err := ParseAllowedPaths(prefix+AllowedPathsOption, params[AllowedPathsOption])
		return NewDirectoryProvider(allowed), err
	}},
	EnvVarClass: {[]string{AllowlistPatternOption}, func(prefix string, params map[string]string) (Provider, error) {
		pattern, ok := params[AllowlistPatternOption]
		if !ok {
			return NewEnvVarProvider(os.Environ(), nil), nil // Connect's default, .*
		}
		re, err := javaregex.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("%s%s: %v", prefix, AllowlistPatternOption, err)
		}
		return NewEnvVarProvider(os.Environ(), re), nil
	}},
}

// Classes are the provider classes Sluice has, sorted.
func Classes() []string {
	out := make([]string, 0, len(classes))
	for c := range classes {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// ListedProviders are the names config.providers lists.
func ListedProviders(props map[string]string) []string {
	return connectors.SplitList(props[ProvidersKey])
}

// FromWorkerProps builds the providers a worker's keys configure:
// config.providers lists names, config.providers.<name>.class gives each
// its class and config.providers.<name>.param.<option> its options, as
// Connect's Worker builds them. It returns nil when config.providers
// lists none. Every bad key is named in one error. Where Connect would
// quietly do without a provider (a listed name without a class) or ignore
// an option it does not know, Sluice refuses the key: either would leave
// placeholders unresolved, or a misspelt allowed.paths unapplied.
func FromWorkerProps(props map[string]string, log zerolog.Logger) (*Transformer, error) {
	names := ListedProviders(props)
	if len(names) == 0 {
		return nil, nil
	}
	var errs []error
	providers := map[string]Provider{}
	for _, name := range names {
		prefix := ProviderKeyPrefix + name + "."
		classKey := prefix + "class"
		class := strings.TrimSpace(props[classKey])
		if class == "" {
			errs = append(errs, fmt.Errorf("%s: config.providers lists %q but does not give its class", classKey, name))
			continue
		}
		c, ok := classes[class]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: unknown config provider class %q; Sluice has %s", classKey, class, strings.Join(Classes(), ", ")))
			continue
		}
		paramPrefix := prefix + "param."
		params := map[string]string{}
		for k, v := range props {
			if !strings.HasPrefix(k, prefix) || k == classKey {
				continue
			}
			option, isParam := strings.CutPrefix(k, paramPrefix)
			switch {
			case !isParam:
				errs = append(errs, fmt.Errorf("%s: not a config provider key (config.providers.%s.class or config.providers.%s.param.<option>)", k, name, name))
			case !slices.Contains(c.options, option):
				errs = append(errs, fmt.Errorf("%s: %s takes no option %q (its options: %s)", k, class, option, strings.Join(c.options, ", ")))
			default:
				params[option] = v
			}
		}
		p, err := c.build(paramPrefix, params)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		providers[name] = p
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return NewTransformer(providers, log), nil
}

// ResolveWorkerProps replaces the placeholders in a worker's own keys
// with t's providers, as Kafka's AbstractConfig does for every config
// that defines config.providers (KIP-421), so that a worker key such as
// sasl.jaas.config can keep its secret in a file. It returns a new map.
func ResolveWorkerProps(t *Transformer, props map[string]string) (map[string]string, error) {
	resolved, err := t.Transform(props)
	if err != nil {
		return nil, fmt.Errorf("worker keys: %w", err)
	}
	out := make(map[string]string, len(resolved))
	for k, v := range resolved {
		out[k] = v
	}
	return out, nil
}
