package transforms

import (
	"regexp"

	"github.com/sluice-io/sluice/connectors"
	"github.com/sluice-io/sluice/internal/javaregex"
)

// Connect's predicates (org.apache.kafka.connect.transforms.predicates.*),
// which decide, record by record, whether a transform applies.

const predicatePkg = pkg + "predicates."

// TopicNameMatches is true for a record whose topic matches pattern, a
// Java regular expression, as a whole (Matcher.matches). The pattern is
// translated for Go's RE2 engine (javaregex.Compile, as RegexRouter's); one that RE2 cannot
// match as Java would is refused when the connector is configured, naming
// the construct.
var _ = addPredicate(connectors.PredicatePlugin{
	Class: predicatePkg + "TopicNameMatches",
	New:   func() connectors.Predicate { return &topicNameMatches{} },
})

const topicNamePattern = "pattern"

type topicNameMatches struct {
	re *regexp.Regexp
}

func (p *topicNameMatches) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: topicNamePattern, Type: connectors.TypeString, Required: true,
			Importance: connectors.Medium, Doc: "A Java regular expression for matching against the name of a record's topic.",
			Validate: validateTopicPattern})
}

// validateTopicPattern is Connect's NonEmptyString and RegexValidator,
// with RE2's limits.
func validateTopicPattern(v string) error {
	if err := validateNonEmptyString(v); err != nil {
		return err
	}
	_, err := javaregex.Compile(javaTrim(v))
	return err
}

func (p *topicNameMatches) Configure(props map[string]string) error {
	re, err := javaregex.Compile(javaTrim(props[topicNamePattern]))
	if err != nil {
		ce := &connectors.ConfigError{}
		ce.Add(topicNamePattern, err.Error())
		return ce
	}
	p.re = re.Whole
	return nil
}

func (p *topicNameMatches) Test(r *connectors.Record) bool { return p.re.MatchString(r.Topic) }

func (p *topicNameMatches) Close() error { return nil }

// HasHeaderKey is true for a record with at least one header named name.
var _ = addPredicate(connectors.PredicatePlugin{
	Class: predicatePkg + "HasHeaderKey",
	New:   func() connectors.Predicate { return &hasHeaderKey{} },
})

const hasHeaderKeyName = "name"

type hasHeaderKey struct {
	name string
}

func (p *hasHeaderKey) Config() *connectors.ConfigDef {
	return connectors.NewConfigDef().
		Define(connectors.ConfigKey{Name: hasHeaderKeyName, Type: connectors.TypeString, Required: true,
			Importance: connectors.Medium, Doc: "The header name.", Validate: validateNonEmptyString})
}

func (p *hasHeaderKey) Configure(props map[string]string) error {
	p.name = javaTrim(props[hasHeaderKeyName])
	return nil
}

func (p *hasHeaderKey) Test(r *connectors.Record) bool {
	for _, h := range r.Headers {
		if h.Key == p.name {
			return true
		}
	}
	return false
}

func (p *hasHeaderKey) Close() error { return nil }

// RecordIsTombstone is true for a record whose value is null: nil, or a
// nil slice, map or pointer (a tombstone read by ByteArrayConverter is a
// nil []byte).
var _ = addPredicate(connectors.PredicatePlugin{
	Class: predicatePkg + "RecordIsTombstone",
	New:   func() connectors.Predicate { return recordIsTombstone{} },
})

type recordIsTombstone struct{}

func (recordIsTombstone) Config() *connectors.ConfigDef { return connectors.NewConfigDef() }

func (recordIsTombstone) Configure(map[string]string) error { return nil }

func (recordIsTombstone) Test(r *connectors.Record) bool { return isJavaNull(r.Value) }

func (recordIsTombstone) Close() error { return nil }
