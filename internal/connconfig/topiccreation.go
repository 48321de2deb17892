package connconfig

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-io/sluice/connectors"
)

// Topic creation keys of source connectors (KIP-158), after
// TopicCreationConfig in Kafka Connect: topic.creation.groups lists groups;
// topic.creation.<group>.<setting> configures one, and the group "default"
// always exists.
const (
	TopicCreationPrefix                   = "topic.creation."
	TopicCreationDefaultGroup             = "default"
	TopicCreationDefaultPartitions        = "topic.creation.default.partitions"
	TopicCreationDefaultReplicationFactor = "topic.creation.default.replication.factor"

	topicCreationInclude     = "include"
	topicCreationExclude     = "exclude"
	topicCreationPartitions  = "partitions"
	topicCreationReplication = "replication.factor"
)

// TopicCreation is how a source creates the topics it writes to.
type TopicCreation struct {
	// Enabled is whether the source creates missing topics: the worker's
	// topic.creation.enable is true and the config has a topic.creation.*
	// key, as Connect decides. Otherwise the source produces to a missing
	// topic and the broker creates it if auto.create.topics.enable lets it.
	Enabled bool
	// Groups are the groups of topic.creation.groups, in its order, without
	// the default group.
	Groups []TopicCreationGroup
	// Default is the default group: it takes every topic no other group
	// takes.
	Default TopicCreationGroup
}

// TopicCreationGroup is the settings of the topics a group creates.
type TopicCreationGroup struct {
	Name string
	// Include and Exclude match whole topic names; a topic is the group's
	// if Include matches it and Exclude does not. The default group has
	// neither.
	Include, Exclude *regexp.Regexp
	// Partitions and ReplicationFactor of new topics; -1 takes the
	// broker's default.
	Partitions        int32
	ReplicationFactor int16
	// Configs are the group's other keys, passed to the broker as the new
	// topic's configs (cleanup.policy, retention.ms, ...).
	Configs map[string]string
}

// Matches reports whether topic is the group's, as Connect's
// TopicCreationGroup.matches.
func (g TopicCreationGroup) Matches(topic string) bool {
	if g.Include == nil || !g.Include.MatchString(topic) {
		return false
	}
	return g.Exclude == nil || !g.Exclude.MatchString(topic)
}

// GroupFor returns the group that creates topic: the first of Groups that
// matches it, else the default group (Connect's findFirstGroup).
func (tc TopicCreation) GroupFor(topic string) TopicCreationGroup {
	for _, g := range tc.Groups {
		if g.Matches(topic) {
			return g
		}
	}
	return tc.Default
}

// usesTopicCreation reports whether config has a topic.creation.* key,
// which is what makes Connect create a source's topics
// (SourceConnectorConfig.usesTopicCreation).
func usesTopicCreation(config map[string]string) bool {
	for k := range config {
		if strings.HasPrefix(k, TopicCreationPrefix) {
			return true
		}
	}
	return false
}

// parseTopicCreation parses the topic creation keys of a source. Where
// Connect ignores a key (a group not listed in topic.creation.groups, the
// default group's include and exclude) Sluice refuses it by name; where
// Connect fails the connector when it starts (the default group's
// partitions and replication factor missing) Sluice refuses the config.
// With the worker's topic.creation.enable=false, Connect ignores every
// topic.creation.* key, and so does Sluice.
func parseTopicCreation(w Worker, t connectors.Type, config map[string]string, ce *connectors.ConfigError) TopicCreation {
	if t != connectors.Source || w.TopicCreationDisabled || !usesTopicCreation(config) {
		return TopicCreation{}
	}
	tc := TopicCreation{Enabled: true}
	var names []string
	for _, g := range connectors.SplitList(config[TopicCreationGroups]) {
		// Connect drops "default" from the list (it always exists) and
		// repeats; a repeat is reported by topic.creation.groups' own check.
		if g != TopicCreationDefaultGroup && !slices.Contains(names, g) {
			names = append(names, g)
		}
	}
	settings := groupSettings(config, names, ce)
	tc.Default = TopicCreationGroup{Name: TopicCreationDefaultGroup, Partitions: -1, ReplicationFactor: -1}
	def := settings[TopicCreationDefaultGroup]
	for _, k := range []string{topicCreationReplication, topicCreationPartitions} {
		if _, ok := def[k]; !ok {
			key := TopicCreationPrefix + TopicCreationDefaultGroup + "." + k
			ce.Add(key, fmt.Sprintf("Missing required configuration %q which has no default value.", key))
		}
	}
	for _, k := range []string{topicCreationInclude, topicCreationExclude} {
		if _, ok := def[k]; ok {
			ce.Add(TopicCreationPrefix+TopicCreationDefaultGroup+"."+k, "The default topic creation group takes every topic no "+
				"other group takes; Kafka Connect ignores its include and exclude. Remove the key, or define a group of your own "+
				"in "+TopicCreationGroups+".")
		}
	}
	fillGroup(&tc.Default, def, nil, ce)
	for _, name := range names {
		g := TopicCreationGroup{Name: name}
		prefix := TopicCreationPrefix + name + "."
		if len(connectors.SplitList(settings[name][topicCreationInclude])) == 0 {
			ce.Add(prefix+topicCreationInclude, fmt.Sprintf("Topic creation group %q has no %s: it would match no topic "+
				"(Kafka Connect would never use it). Give it the regular expressions of the topic names it is for.", name, prefix+topicCreationInclude))
		}
		fillGroup(&g, settings[name], &tc.Default, ce)
		tc.Groups = append(tc.Groups, g)
	}
	return tc
}

// groupSettings sorts the topic.creation.* keys of config by group: for
// each group, its settings (the key without topic.creation.<group>.) and
// their raw values. A key that names no group is refused by name.
func groupSettings(config map[string]string, names []string, ce *connectors.ConfigError) map[string]map[string]string {
	// Longest first, so a group named "a.b" wins over one named "a".
	groups := append([]string{TopicCreationDefaultGroup}, names...)
	sort.Slice(groups, func(i, j int) bool { return len(groups[i]) > len(groups[j]) })
	out := map[string]map[string]string{}
	for k, v := range config {
		rest, ok := strings.CutPrefix(k, TopicCreationPrefix)
		if !ok || k == TopicCreationGroups {
			continue
		}
		group, setting := "", ""
		for _, g := range groups {
			if s, ok := strings.CutPrefix(rest, g+"."); ok && s != "" {
				group, setting = g, s
				break
			}
		}
		switch {
		case group != "":
			if out[group] == nil {
				out[group] = map[string]string{}
			}
			out[group][setting] = v
		case rest == "enable":
			ce.Add(k, "topic.creation.enable is a worker setting (see the worker's properties), not a connector's. Remove the key.")
		case strings.Contains(rest, "."):
			g := rest[:strings.Index(rest, ".")]
			ce.Add(k, fmt.Sprintf("Topic creation group %q is not listed in %s, so Kafka Connect would ignore this key. "+
				"Add %s to %s, or remove the key.", g, TopicCreationGroups, g, TopicCreationGroups))
		default:
			ce.Add(k, fmt.Sprintf("%s is not a topic creation key: they are %s<group>.<setting>. Remove the key.", k, TopicCreationPrefix))
		}
	}
	return out
}

// fillGroup sets g from its settings. A group other than the default takes
// the default group's partitions and replication factor where it sets none.
func fillGroup(g *TopicCreationGroup, settings map[string]string, def *TopicCreationGroup, ce *connectors.ConfigError) {
	prefix := TopicCreationPrefix + g.Name + "."
	if def != nil {
		g.Partitions, g.ReplicationFactor = def.Partitions, def.ReplicationFactor
	}
	for _, setting := range sortedKeys(settings) {
		raw, key := settings[setting], prefix+setting
		switch setting {
		case topicCreationInclude, topicCreationExclude:
			if def == nil {
				continue // the default group's: refused above
			}
			re, err := compileTopicPatterns(raw)
			if err != nil {
				ce.Add(key, fmt.Sprintf("Invalid value %q for configuration %s: Syntax error in regular expression: %v", raw, key, err))
			} else if setting == topicCreationInclude {
				g.Include = re
			} else {
				g.Exclude = re
			}
		case topicCreationPartitions:
			n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 32)
			if err != nil || (n != -1 && n < 1) {
				ce.Add(key, fmt.Sprintf("Invalid value %q for configuration %s: Number of partitions must be positive, or -1 to use the broker's default", raw, key))
				continue
			}
			g.Partitions = int32(n)
		case topicCreationReplication:
			n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 16)
			if err != nil || (n != -1 && n < 1) {
				ce.Add(key, fmt.Sprintf("Invalid value %q for configuration %s: Replication factor must be positive and not larger "+
					"than the number of brokers in the Kafka cluster, or -1 to use the broker's default", raw, key))
				continue
			}
			g.ReplicationFactor = int16(n)
		default:
			// A topic config: the broker judges it when it creates the
			// topic, as with Connect.
			if g.Configs == nil {
				g.Configs = map[string]string{}
			}
			g.Configs[setting] = raw
		}
	}
}

// compileTopicPatterns compiles a list of regular expressions into one that
// matches a whole topic name matched by any of them, as Connect joins them
// with | and calls matches(). An empty list matches nothing (nil).
func compileTopicPatterns(list string) (*regexp.Regexp, error) {
	parts := connectors.SplitList(list)
	if len(parts) == 0 {
		return nil, nil
	}
	for _, p := range parts {
		if _, err := regexp.Compile(p); err != nil {
			return nil, err
		}
	}
	return regexp.Compile(`^(?:` + strings.Join(parts, "|") + `)$`)
}
