// Package transform builds a connector's chain of single message
// transforms from its config, as Kafka Connect's ConnectorConfig and
// TransformationChain do, and runs records through it: each transform in
// the order of `transforms`, skipped for a record its predicate (with
// negate) rules out, the chain ending at the first transform that drops
// the record.
package transform

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/connconfig"
)

// Keys of a transform alias a (transforms.<a>.<key>) and of a predicate
// alias p (predicates.<p>.<key>) that the runtime reads itself.
const (
	typeKey      = "type"
	predicateKey = "predicate"
	negateKey    = "negate"
)

// Chain is a connector's transforms, configured. It is used by one task
// goroutine at a time.
type Chain struct {
	steps      []step
	predicates []connectors.Predicate
}

type step struct {
	alias  string
	class  string
	t      connectors.Transform
	pred   connectors.Predicate // nil: applies to every record
	negate bool
}

// Error is a transform's failure on a record: the stage TRANSFORMATION of
// Connect's error reporting, with the transform's class for the dead
// letter queue's headers.
type Error struct {
	Alias string
	Class string
	Err   error
}

func (e *Error) Error() string {
	return fmt.Sprintf("transform %q (%s): %v", e.Alias, e.Class, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Len is the number of transforms.
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.steps)
}

// Every reports whether ok holds for each of the chain's transforms and
// predicates; true for a nil chain.
func (c *Chain) Every(ok func(plugin any) bool) bool {
	if c == nil {
		return true
	}
	for _, s := range c.steps {
		if !ok(s.t) || (s.pred != nil && !ok(s.pred)) {
			return false
		}
	}
	return true
}

// Apply runs r through the chain and returns what comes out, nil when a
// transform dropped the record. An error is an *Error naming the transform
// that failed.
func (c *Chain) Apply(r *connectors.Record) (*connectors.Record, error) {
	if c == nil {
		return r, nil
	}
	for _, s := range c.steps {
		if s.pred != nil && s.pred.Test(r) == s.negate {
			continue
		}
		out, err := s.t.Apply(r)
		if err != nil {
			return nil, &Error{Alias: s.alias, Class: s.class, Err: err}
		}
		if out == nil {
			return nil, nil
		}
		r = out
	}
	return r, nil
}

// Close closes every transform and predicate.
func (c *Chain) Close() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, s := range c.steps {
		errs = append(errs, s.t.Close())
	}
	for _, p := range c.predicates {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// Build makes and configures the chain config names. Every bad key is
// named at once in a *connectors.ConfigError, keyed by the full key
// (transforms.<a>.type, transforms.<a>.<key>, predicates.<p>.<key>). A
// config without transforms gives a nil chain, which passes records on.
func Build(reg *connectors.Registry, config map[string]string) (*Chain, error) {
	aliases := connectors.SplitList(config[connconfig.Transforms])
	if len(aliases) == 0 && len(connectors.SplitList(config[connconfig.Predicates])) == 0 {
		return nil, nil
	}
	ce := &connectors.ConfigError{}
	predAliases := connectors.SplitList(config[connconfig.Predicates])
	refuseDuplicates(ce, connconfig.Transforms, aliases)
	refuseDuplicates(ce, connconfig.Predicates, predAliases)
	c := &Chain{}
	preds := map[string]connectors.Predicate{}
	for _, p := range predAliases {
		if _, dup := preds[p]; dup {
			continue
		}
		pr := buildPredicate(reg, config, p, ce)
		preds[p] = pr
		if pr != nil {
			c.predicates = append(c.predicates, pr)
		}
	}
	for _, a := range aliases {
		if s, ok := buildStep(reg, config, a, preds, ce); ok {
			c.steps = append(c.steps, s)
		}
	}
	if err := ce.Err(); err != nil || len(c.steps) == 0 {
		// Predicates without transforms are checked, and have nothing to
		// do.
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// refuseDuplicates refuses a list of aliases that names one twice, as
// Connect's alias validator does.
func refuseDuplicates(ce *connectors.ConfigError, key string, aliases []string) {
	seen := map[string]bool{}
	for _, a := range aliases {
		if seen[a] {
			ce.Add(key, fmt.Sprintf("Invalid value %s for configuration %s: Duplicate alias provided.", strings.Join(aliases, ","), key))
			return
		}
		seen[a] = true
	}
}

func buildStep(reg *connectors.Registry, config map[string]string, alias string, preds map[string]connectors.Predicate, ce *connectors.ConfigError) (step, bool) {
	prefix := connconfig.Transforms + "." + alias + "."
	p, t, ok := lookupTransform(reg, config, prefix, ce)
	if !ok {
		return step{}, false
	}
	s := step{alias: alias, class: p.Class}
	_, hasNegate := config[prefix+negateKey]
	if _, hasPredicate := config[prefix+predicateKey]; hasNegate && !hasPredicate {
		ce.Add(prefix+negateKey, fmt.Sprintf("Config '%s' was provided but there is no config '%s' defining a predicate to be negated.", prefix+negateKey, prefix+predicateKey))
		return step{}, false
	}
	if name := strings.TrimSpace(config[prefix+predicateKey]); name != "" {
		pr, declared := preds[name]
		if !declared {
			ce.Add(prefix+predicateKey, fmt.Sprintf("Predicate %q is not declared in %s", name, connconfig.Predicates))
			_ = t.Close()
			return step{}, false
		}
		s.pred = pr
	}
	s.negate = strings.EqualFold(strings.TrimSpace(config[prefix+negateKey]), "true")
	def := TransformDef(alias, t.Config())
	// As Connect's ConnectorConfig, the runtime's own predicate and negate
	// keys are not the transform's.
	withoutRuntimeKeys := func(own map[string]string) error {
		delete(own, predicateKey)
		delete(own, negateKey)
		return t.Configure(own)
	}
	if !configure(def, withoutRuntimeKeys, config, prefix, ce) {
		_ = t.Close()
		return step{}, false
	}
	s.t = t
	return s, true
}

// lookupTransform finds and instantiates the transform prefix+type names.
func lookupTransform(reg *connectors.Registry, config map[string]string, prefix string, ce *connectors.ConfigError) (connectors.TransformPlugin, connectors.Transform, bool) {
	class := strings.TrimSpace(config[prefix+typeKey])
	if class == "" {
		ce.Add(prefix+typeKey, missing(prefix+typeKey))
		return connectors.TransformPlugin{}, nil, false
	}
	p, err := reg.LookupTransform(class)
	if err != nil {
		ce.Add(prefix+typeKey, err.Error())
		return p, nil, false
	}
	return p, p.New(), true
}

func buildPredicate(reg *connectors.Registry, config map[string]string, alias string, ce *connectors.ConfigError) connectors.Predicate {
	prefix := connconfig.Predicates + "." + alias + "."
	class := strings.TrimSpace(config[prefix+typeKey])
	if class == "" {
		ce.Add(prefix+typeKey, missing(prefix+typeKey))
		return nil
	}
	p, err := reg.LookupPredicate(class)
	if err != nil {
		ce.Add(prefix+typeKey, err.Error())
		return nil
	}
	pr := p.New()
	if !configure(PredicateDef(alias, pr.Config()), pr.Configure, config, prefix, ce) {
		_ = pr.Close()
		return nil
	}
	return pr
}

func missing(key string) string {
	return fmt.Sprintf("Missing required configuration %q which has no default value.", key)
}

// configure validates config against def (the alias's prefixed keys) and
// hands the alias's own keys, prefix stripped, to configure; an error it
// returns is attributed to the key a *connectors.ConfigError names, else to
// the alias's type key.
func configure(def *connectors.ConfigDef, configure func(map[string]string) error, config map[string]string, prefix string, ce *connectors.ConfigError) bool {
	ok := true
	for _, v := range def.Validate(config) {
		for _, e := range v.Errors {
			ce.Add(v.Name, e)
			ok = false
		}
	}
	if !ok {
		return false
	}
	if err := configure(withPrefix(config, prefix)); err != nil {
		var keyed *connectors.ConfigError
		if errors.As(err, &keyed) {
			for k, msgs := range keyed.Errors {
				for _, m := range msgs {
					ce.Add(prefix+k, m)
				}
			}
		} else {
			ce.Add(prefix+typeKey, err.Error())
		}
		return false
	}
	return true
}

// withPrefix is the keys of config under prefix, with it stripped, as
// Connect's originalsWithPrefix hands them to a transform (type, predicate
// and negate included).
func withPrefix(config map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range config {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}
