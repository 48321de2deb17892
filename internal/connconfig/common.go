// Package connconfig defines the config keys that every connector config has,
// whatever its plugin: the keys the runtime reads (name, class, tasks.max,
// converters, transforms, error handling, topic selection for sinks, topic
// creation and exactly-once settings for sources). Names, types, defaults,
// documentation and groups are Kafka Connect's, so that configs written for
// Connect validate, and the validate endpoint answers, as they do in Connect.
package connconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sluice-io/sluice/connectors"
)

// Keys every connector has.
const (
	Name               = "name"
	ConnectorClass     = "connector.class"
	TasksMax           = "tasks.max"
	KeyConverter       = "key.converter"
	ValueConverter     = "value.converter"
	HeaderConverter    = "header.converter"
	Transforms         = "transforms"
	Predicates         = "predicates"
	ConfigActionReload = "config.action.reload"

	ErrorsRetryTimeout       = "errors.retry.timeout"
	ErrorsRetryDelayMaxMs    = "errors.retry.delay.max.ms"
	ErrorsTolerance          = "errors.tolerance"
	ErrorsLogEnable          = "errors.log.enable"
	ErrorsLogIncludeMessages = "errors.log.include.messages"
)

// Keys only sink connectors have.
const (
	Topics                    = "topics"
	TopicsRegex               = "topics.regex"
	DLQTopicName              = "errors.deadletterqueue.topic.name"
	DLQTopicReplicationFactor = "errors.deadletterqueue.topic.replication.factor"
	DLQContextHeadersEnable   = "errors.deadletterqueue.context.headers.enable"
)

// Keys only source connectors have.
const (
	TopicCreationGroups = "topic.creation.groups"
	ExactlyOnceSupport  = "exactly.once.support"
	TransactionBoundary = "transaction.boundary"
	// TransactionBoundaryIntervalMs is how often an interval boundary
	// commits; unset, the worker's offset.flush.interval.ms.
	TransactionBoundaryIntervalMs = "transaction.boundary.interval.ms"
	OffsetsStorageTopic           = "offsets.storage.topic"
)

// Values of the enumerated keys.
const (
	ReloadNone    = "none"
	ReloadRestart = "restart"

	ToleranceNone = "none"
	ToleranceAll  = "all"

	ExactlyOnceRequested = "requested"
	ExactlyOnceRequired  = "required"

	BoundaryPoll      = "poll"
	BoundaryInterval  = "interval"
	BoundaryConnector = "connector"
)

// Groups, in the order the validate endpoint lists them.
const (
	GroupCommon        = "Common"
	GroupTransforms    = "Transforms"
	GroupPredicates    = "Predicates"
	GroupErrorHandling = "Error Handling"
	GroupTopicCreation = "Topic Creation"
	GroupExactlyOnce   = "Exactly Once Support"
	// GroupOffsetsStorage is the group Kafka Connect puts
	// offsets.storage.topic in.
	GroupOffsetsStorage = "offsets.storage"
)

// MaxNameLength is the longest connector name accepted, in bytes. Kafka
// topic names stop at 249 characters, and a name that fits one stays usable
// wherever the runtime derives names from it.
const MaxNameLength = 249

// ValidName reports why name cannot name a connector, or nil. Names become
// parts of config topic keys (connector-<name>, task-<name>-<n>) and of REST
// URLs, so whatever would make those ambiguous or unreadable is refused.
func ValidName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("name must not be empty")
	case len(name) > MaxNameLength:
		return fmt.Errorf("name must be at most %d bytes long, not %d", MaxNameLength, len(name))
	case !utf8.ValidString(name):
		return fmt.Errorf("name must be valid UTF-8")
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("name must not start or end with whitespace")
	case name == "." || name == "..":
		return fmt.Errorf("name must not be %q: it cannot be addressed in a URL path", name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("name must not contain control characters (found %U)", r)
		}
		if r == '/' {
			return fmt.Errorf("name must not contain '/'")
		}
	}
	return nil
}

// ConfigDef returns the runtime keys of a connector of type t. For a type
// that is neither Source nor Sink (a config whose class is unknown) it returns
// the keys both share, so that those can still be checked.
func ConfigDef(t connectors.Type) *connectors.ConfigDef {
	d := connectors.NewConfigDef()
	d.Define(connectors.ConfigKey{
		Name: Name, Type: connectors.TypeString, Required: true, Importance: connectors.High,
		Doc:   "Globally unique name to use for this connector.",
		Group: GroupCommon, DisplayName: "Connector name",
		Validate: ValidName,
	})
	d.Define(connectors.ConfigKey{
		Name: ConnectorClass, Type: connectors.TypeString, Required: true, Importance: connectors.High,
		Doc: "Name or alias of the class for this connector. If the connector is " +
			"org.apache.kafka.connect.file.FileStreamSinkConnector, you can either specify this full name, " +
			"or use \"FileStreamSink\" or \"FileStreamSinkConnector\" to make the configuration a bit shorter",
		Group: GroupCommon, DisplayName: "Connector class",
	})
	d.Define(connectors.ConfigKey{
		Name: TasksMax, Type: connectors.TypeInt, Default: "1", Importance: connectors.High,
		Doc:   "Maximum number of tasks to use for this connector.",
		Group: GroupCommon, DisplayName: "Tasks max",
		Validate: connectors.AtLeast(1),
	})
	d.Define(connectors.ConfigKey{
		Name: KeyConverter, Type: connectors.TypeClass, Importance: connectors.Low,
		Doc: "Converter class used to convert between Kafka Connect format and the serialized form that is " +
			"written to Kafka. This controls the format of the keys in messages written to or read from Kafka, " +
			"and since this is independent of connectors it allows any connector to work with any serialization " +
			"format. Examples of common formats include JSON and Avro.",
		Group: GroupCommon, DisplayName: "Key converter class",
	})
	d.Define(connectors.ConfigKey{
		Name: ValueConverter, Type: connectors.TypeClass, Importance: connectors.Low,
		Doc: "Converter class used to convert between Kafka Connect format and the serialized form that is " +
			"written to Kafka. This controls the format of the values in messages written to or read from Kafka, " +
			"and since this is independent of connectors it allows any connector to work with any serialization " +
			"format. Examples of common formats include JSON and Avro.",
		Group: GroupCommon, DisplayName: "Value converter class",
	})
	d.Define(connectors.ConfigKey{
		Name: HeaderConverter, Type: connectors.TypeClass, Importance: connectors.Low,
		Doc: "HeaderConverter class used to convert between Kafka Connect format and the serialized form that " +
			"is written to Kafka. This controls the format of the header values in messages written to or read " +
			"from Kafka, and since this is independent of connectors it allows any connector to work with any " +
			"serialization format. Examples of common formats include JSON and Avro. By default, the " +
			"SimpleHeaderConverter is used to serialize header values to strings and deserialize them by " +
			"inferring the schemas.",
		Group: GroupCommon, DisplayName: "Header converter class",
	})
	d.Define(connectors.ConfigKey{
		Name: ConfigActionReload, Type: connectors.TypeString, Default: ReloadRestart, Importance: connectors.Low,
		Doc: "The action that Connect should take on the connector when changes in external configuration " +
			"providers result in a change in the connector's configuration properties. A value of 'none' " +
			"indicates that Connect will do nothing. A value of 'restart' indicates that Connect should " +
			"restart/reload the connector with the updated configuration properties. The restart may actually " +
			"be scheduled in the future if the external configuration provider indicates that a configuration " +
			"value will expire in the future.",
		Group: GroupCommon, DisplayName: "Reload Action",
		Validate:    connectors.OneOf(ReloadNone, ReloadRestart),
		Recommended: []string{ReloadNone, ReloadRestart},
	})
	if t == connectors.Sink {
		d.Define(connectors.ConfigKey{
			Name: Topics, Type: connectors.TypeList, Importance: connectors.High,
			Doc:   "List of topics to consume, separated by commas",
			Group: GroupCommon, DisplayName: "Topics",
		})
		d.Define(connectors.ConfigKey{
			Name: TopicsRegex, Type: connectors.TypeString, Importance: connectors.High,
			Doc: "Regular expression giving topics to consume. The whole topic name must match. " +
				"Only one of topics or topics.regex should be specified.",
			Group: GroupCommon, DisplayName: "Topics regex",
			Validate: validRegex,
		})
	}
	d.Define(connectors.ConfigKey{
		Name: Transforms, Type: connectors.TypeList, Importance: connectors.Low,
		Doc:   "Aliases for the transformations to be applied to records.",
		Group: GroupTransforms, DisplayName: "Transforms",
		Validate: uniqueAliases,
	})
	d.Define(connectors.ConfigKey{
		Name: Predicates, Type: connectors.TypeList, Importance: connectors.Low,
		Doc:   "Aliases for the predicates used by transformations.",
		Group: GroupPredicates, DisplayName: "Predicates",
		Validate: uniqueAliases,
	})
	defineErrorHandling(d)
	switch t {
	case connectors.Sink:
		defineSink(d)
	case connectors.Source:
		defineSource(d)
	}
	return d
}

// defineErrorHandling defines the errors.* keys every connector has.
func defineErrorHandling(d *connectors.ConfigDef) {
	d.Define(connectors.ConfigKey{
		Name: ErrorsRetryTimeout, Type: connectors.TypeLong, Default: "0", Importance: connectors.Medium,
		Doc: "The maximum duration in milliseconds that a failed operation will be reattempted. The default " +
			"is 0, which means no retries will be attempted. Use -1 for infinite retries.",
		Group: GroupErrorHandling, DisplayName: "Retry Timeout for Errors",
		Validate: connectors.AtLeast(-1),
	})
	d.Define(connectors.ConfigKey{
		Name: ErrorsRetryDelayMaxMs, Type: connectors.TypeLong, Default: "60000", Importance: connectors.Medium,
		Doc: "The maximum duration in milliseconds between consecutive retry attempts. Jitter will be added " +
			"to the delay once this limit is reached to prevent thundering herd issues.",
		Group: GroupErrorHandling, DisplayName: "Maximum Delay Between Retries for Errors",
		Validate: connectors.AtLeast(0),
	})
	d.Define(connectors.ConfigKey{
		Name: ErrorsTolerance, Type: connectors.TypeString, Default: ToleranceNone, Importance: connectors.Medium,
		Doc: "Behavior for tolerating errors during connector operation. 'none' is the default value and " +
			"signals that any error will result in an immediate connector task failure; 'all' changes the " +
			"behavior to skip over problematic records.",
		Group: GroupErrorHandling, DisplayName: "Error Tolerance",
		Validate:    connectors.OneOf(ToleranceNone, ToleranceAll),
		Recommended: []string{ToleranceNone, ToleranceAll},
	})
	d.Define(connectors.ConfigKey{
		Name: ErrorsLogEnable, Type: connectors.TypeBoolean, Default: "false", Importance: connectors.Medium,
		Doc: "If true, write each error and the details of the failed operation and problematic record to " +
			"the Connect application log. This is 'false' by default, so that only errors that are not " +
			"tolerated are reported.",
		Group: GroupErrorHandling, DisplayName: "Log Errors",
		Recommended: []string{"true", "false"},
	})
	d.Define(connectors.ConfigKey{
		Name: ErrorsLogIncludeMessages, Type: connectors.TypeBoolean, Default: "false", Importance: connectors.Medium,
		Doc: "Whether to include in the log the Connect record that resulted in a failure. For sink records, " +
			"the topic, partition, offset, and timestamp will be logged. For source records, the key and value " +
			"(and their schemas), all headers, and the timestamp, Kafka topic, Kafka partition, source " +
			"partition, and source offset will be logged. This is 'false' by default, which will prevent " +
			"record keys, values, and headers from being written to log files.",
		Group: GroupErrorHandling, DisplayName: "Log Error Details",
		Recommended: []string{"true", "false"},
	})
}

func defineSink(d *connectors.ConfigDef) {
	d.Define(connectors.ConfigKey{
		Name: DLQTopicName, Type: connectors.TypeString, Importance: connectors.Medium,
		Doc: "The name of the topic to be used as the dead letter queue (DLQ) for messages that result in an " +
			"error when processed by this sink connector, or its transformations or converters. The topic name " +
			"is blank by default, which means that no messages are to be recorded in the DLQ.",
		Group: GroupErrorHandling, DisplayName: "Dead Letter Queue Topic Name",
	})
	// Kafka Connect types this key SHORT; ConfigType has no SHORT, so the
	// range check stands in for it.
	d.Define(connectors.ConfigKey{
		Name: DLQTopicReplicationFactor, Type: connectors.TypeInt, Default: "3", Importance: connectors.Medium,
		Doc: "Replication factor used to create the dead letter queue topic when it doesn't already exist. " +
			"-1 uses the broker's default.",
		Group: GroupErrorHandling, DisplayName: "Dead Letter Queue Topic Replication Factor",
		Validate: replicationFactor,
	})
	d.Define(connectors.ConfigKey{
		Name: DLQContextHeadersEnable, Type: connectors.TypeBoolean, Default: "false", Importance: connectors.Medium,
		Doc: "If true, add headers containing error context to the messages written to the dead letter " +
			"queue. To avoid clashing with headers from the original record, all error context header keys " +
			"will start with __connect.errors.",
		Group: GroupErrorHandling, DisplayName: "Enable Error Context Headers",
		Recommended: []string{"true", "false"},
	})
}

func defineSource(d *connectors.ConfigDef) {
	d.Define(connectors.ConfigKey{
		Name: TopicCreationGroups, Type: connectors.TypeList, Importance: connectors.Low,
		Doc:   "Groups of configurations for topics created by source connectors",
		Group: GroupTopicCreation, DisplayName: "Topic Creation Groups",
		Validate: uniqueAliases,
	})
	d.Define(connectors.ConfigKey{
		Name: ExactlyOnceSupport, Type: connectors.TypeString, Default: ExactlyOnceRequested, Importance: connectors.Medium,
		Doc: "Permitted values are requested, required. If set to \"required\", forces a preflight check for " +
			"the connector to ensure that it can provide exactly-once semantics with the given configuration. " +
			"Some connectors may be capable of providing exactly-once semantics but not signal to Connect that " +
			"they support this; in that case, documentation for the connector should be consulted carefully " +
			"before creating it, and the value for this property should be set to \"requested\". Additionally, " +
			"if the value is set to \"required\" but the worker that performs preflight validation does not " +
			"have exactly-once support enabled for source connectors, requests to create or validate the " +
			"connector will fail.",
		Group: GroupExactlyOnce, DisplayName: "Exactly once support",
		Validate:    oneOfFold(ExactlyOnceRequested, ExactlyOnceRequired),
		Recommended: []string{ExactlyOnceRequested, ExactlyOnceRequired},
	})
	d.Define(connectors.ConfigKey{
		Name: TransactionBoundary, Type: connectors.TypeString, Default: BoundaryPoll, Importance: connectors.Medium,
		Doc: "Permitted values are: poll, interval, connector. If set to 'poll', a new producer transaction " +
			"will be started and committed for every batch of records that each task from this connector " +
			"provides to Connect. If set to 'connector', relies on connector-defined transaction boundaries; " +
			"note that not all connectors are capable of defining their own transaction boundaries, and in " +
			"that case, attempts to instantiate a connector with this value will fail. Finally, if set to " +
			"'interval', commits transactions only after a user-defined time interval has passed.",
		Group: GroupExactlyOnce, DisplayName: "Transaction Boundary",
		Validate:    oneOfFold(BoundaryPoll, BoundaryInterval, BoundaryConnector),
		Recommended: []string{BoundaryPoll, BoundaryInterval, BoundaryConnector},
	})
	d.Define(connectors.ConfigKey{
		Name: TransactionBoundaryIntervalMs, Type: connectors.TypeLong, Importance: connectors.Low,
		Doc: "If 'transaction.boundary' is set to 'interval', determines the interval for producing transaction " +
			"commits by connector tasks. If unset, defaults to the value of the worker-level " +
			"'offset.flush.interval.ms' property. It has no effect if a different transaction.boundary is specified.",
		Group: GroupExactlyOnce, DisplayName: "Transaction boundary interval",
		Validate: connectors.AtLeast(0),
	})
	d.Define(connectors.ConfigKey{
		Name: OffsetsStorageTopic, Type: connectors.TypeString, Importance: connectors.Low,
		Doc: "The name of a separate offsets topic to use for this connector. If empty or not specified, " +
			"the worker's global offsets topic name will be used. If specified, the offsets topic will be " +
			"created if it does not already exist on the Kafka cluster targeted by this connector.",
		Group: GroupOffsetsStorage, DisplayName: "Offsets topic",
		Validate: connectors.NonEmpty,
	})
}

// Validate checks the rules that span several keys, which ConfigDef(t)
// cannot express, and the keys ConfigDef(t) does not define: client
// overrides, under the worker w's policy, and topic creation groups. It
// returns nil when config satisfies them. Per-key checks are
// ConfigDef(t).Validate's job; topics.regex is the exception, because the
// DLQ rule needs it compiled, and so its compile error is reported by both.
func Validate(w Worker, t connectors.Type, config map[string]string) *connectors.ConfigError {
	ce := &connectors.ConfigError{}
	validateAliases(config, ce)
	parseOverrides(w, t, config, ce)
	parseTopicCreation(w, t, config, ce)
	if t == connectors.Sink {
		validateSinkTopics(config, ce)
	}
	if ce.Err() == nil {
		return nil
	}
	return ce
}

// validateAliases mirrors how Connect enriches a config: every transform and
// predicate alias needs its .type, and a transform's predicate must be one of
// the declared predicates.
func validateAliases(config map[string]string, ce *connectors.ConfigError) {
	preds := map[string]bool{}
	for _, a := range connectors.SplitList(config[Predicates]) {
		if preds[a] {
			continue
		}
		preds[a] = true
		if strings.TrimSpace(config[Predicates+"."+a+".type"]) == "" {
			ce.Add(Predicates+"."+a+".type", fmt.Sprintf("Missing required configuration %q which has no default value.", Predicates+"."+a+".type"))
		}
	}
	seen := map[string]bool{}
	for _, a := range connectors.SplitList(config[Transforms]) {
		if seen[a] {
			continue
		}
		seen[a] = true
		prefix := Transforms + "." + a + "."
		if strings.TrimSpace(config[prefix+"type"]) == "" {
			ce.Add(prefix+"type", fmt.Sprintf("Missing required configuration %q which has no default value.", prefix+"type"))
		}
		if p, ok := config[prefix+"predicate"]; ok && strings.TrimSpace(p) != "" && !preds[strings.TrimSpace(p)] {
			ce.Add(prefix+"predicate", fmt.Sprintf("Predicate %q is not declared in %s", strings.TrimSpace(p), Predicates))
		}
	}
}

func validateSinkTopics(config map[string]string, ce *connectors.ConfigError) {
	topicsRaw, regexRaw := config[Topics], strings.TrimSpace(config[TopicsRegex])
	topics := connectors.SplitList(topicsRaw)
	hasTopics, hasRegex := len(topics) > 0, regexRaw != ""
	switch {
	case hasTopics && hasRegex:
		msg := Topics + " and " + TopicsRegex + " are mutually exclusive options, but both are set."
		ce.Add(Topics, msg)
		ce.Add(TopicsRegex, msg)
	case !hasTopics && !hasRegex:
		msg := "Must configure one of " + Topics + " or " + TopicsRegex
		ce.Add(Topics, msg)
		ce.Add(TopicsRegex, msg)
	}
	var re *regexp.Regexp
	if hasRegex {
		var err error
		if re, err = CompileTopicsRegex(regexRaw); err != nil {
			// Same text as ConfigDef's message for the key, so that a caller
			// merging both reports it once.
			ce.Add(TopicsRegex, fmt.Sprintf("Invalid value %q for configuration %s: %v", config[TopicsRegex], TopicsRegex, err))
		}
	}
	dlq := strings.TrimSpace(config[DLQTopicName])
	if dlq == "" {
		return
	}
	for _, tp := range topics {
		if tp == dlq {
			ce.Add(Topics, fmt.Sprintf("The DLQ topic '%s' may not be included in the list of topics ('%s=%s') consumed by the connector", dlq, Topics, strings.Join(topics, ",")))
			break
		}
	}
	if re != nil && re.MatchString(dlq) {
		ce.Add(TopicsRegex, fmt.Sprintf("The DLQ topic '%s' may not be included in the regex matching topic names ('%s=%s') consumed by the connector", dlq, TopicsRegex, regexRaw))
	}
}

// CompileTopicsRegex compiles a topics.regex value so that it matches whole
// topic names, as Java's Pattern.matcher(topic).matches() does in Connect;
// Go's regexp alone would accept any topic containing a match.
func CompileTopicsRegex(expr string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + expr + `)$`)
}

func validRegex(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	_, err := CompileTopicsRegex(strings.TrimSpace(v))
	return err
}

func uniqueAliases(v string) error {
	seen := map[string]bool{}
	for _, a := range connectors.SplitList(v) {
		if seen[a] {
			return fmt.Errorf("duplicate alias provided: %s", a)
		}
		seen[a] = true
	}
	return nil
}

func replicationFactor(v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 16)
	if err != nil {
		return fmt.Errorf("not a 16-bit integer")
	}
	if n == 0 || n < -1 {
		return fmt.Errorf("must be -1 (the broker's default) or at least 1")
	}
	return nil
}

// oneOfFold accepts the allowed values in any case, as Connect's
// CaseInsensitiveValidString does for the exactly-once keys.
func oneOfFold(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if strings.EqualFold(strings.TrimSpace(v), a) {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}
