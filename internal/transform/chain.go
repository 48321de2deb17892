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
	if len(aliases) == 0 {
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
	if err := ce.Err(); err != nil {
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
	own := withPrefix(config, prefix)
	class := strings.TrimSpace(own[typeKey])
	if class == "" {
		ce.Add(prefix+typeKey, fmt.Sprintf("Missing required configuration %q which has no default value.", prefix+typeKey))
		return step{}, false
	}
	p, err := reg.LookupTransform(class)
	if err != nil {
		ce.Add(prefix+typeKey, err.Error())
		return step{}, false
	}
	s := step{alias: alias, class: p.Class}
	_, hasNegate := own[negateKey]
	if _, hasPredicate := own[predicateKey]; hasNegate && !hasPredicate {
		ce.Add(prefix+negateKey, fmt.Sprintf("Config '%s' was provided but there is no config '%s' defining a predicate to be negated.", prefix+negateKey, prefix+predicateKey))
		return step{}, false
	}
	if name := strings.TrimSpace(own[predicateKey]); name != "" {
		pr, declared := preds[name]
		if !declared {
			ce.Add(prefix+predicateKey, fmt.Sprintf("Predicate %q is not declared in %s", name, connconfig.Predicates))
			return step{}, false
		}
		s.pred = pr
	}
	switch v := strings.TrimSpace(own[negateKey]); {
	case v == "" || strings.EqualFold(v, "false"):
	case strings.EqualFold(v, "true"):
		s.negate = true
	default:
		ce.Add(prefix+negateKey, fmt.Sprintf("Invalid value %q for configuration %s: expected a boolean", v, prefix+negateKey))
		return step{}, false
	}
	t := p.New()
	if !configure(t.Config(), t.Configure, own, prefix, ce) {
		_ = t.Close()
		return step{}, false
	}
	s.t = t
	return s, true
}

func buildPredicate(reg *connectors.Registry, config map[string]string, alias string, ce *connectors.ConfigError) connectors.Predicate {
	prefix := connconfig.Predicates + "." + alias + "."
	own := withPrefix(config, prefix)
	class := strings.TrimSpace(own[typeKey])
	if class == "" {
		ce.Add(prefix+typeKey, fmt.Sprintf("Missing required configuration %q which has no default value.", prefix+typeKey))
		return nil
	}
	p, err := reg.LookupPredicate(class)
	if err != nil {
		ce.Add(prefix+typeKey, err.Error())
		return nil
	}
	pr := p.New()
	if !configure(pr.Config(), pr.Configure, own, prefix, ce) {
		_ = pr.Close()
		return nil
	}
	return pr
}

// configure validates own against def, naming bad keys with prefix, then
// hands own to configure; an error it returns is attributed to the key a
// *connectors.ConfigError names, else to the alias's type key.
func configure(def *connectors.ConfigDef, configure func(map[string]string) error, own map[string]string, prefix string, ce *connectors.ConfigError) bool {
	ok := true
	if def != nil {
		for _, v := range def.Validate(own) {
			for _, e := range v.Errors {
				ce.Add(prefix+v.Name, e)
				ok = false
			}
		}
	}
	if !ok {
		return false
	}
	if err := configure(own); err != nil {
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
