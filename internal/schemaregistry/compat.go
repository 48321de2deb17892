package schemaregistry

import (
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
)

// Compatibility levels, as Confluent spells them.
const (
	CompatNone               = "NONE"
	CompatBackward           = "BACKWARD"
	CompatBackwardTransitive = "BACKWARD_TRANSITIVE"
	CompatForward            = "FORWARD"
	CompatForwardTransitive  = "FORWARD_TRANSITIVE"
	CompatFull               = "FULL"
	CompatFullTransitive     = "FULL_TRANSITIVE"
)

// DefaultCompatibility is Confluent's default global level.
const DefaultCompatibility = CompatBackward

var compatLevels = []string{CompatNone, CompatBackward, CompatBackwardTransitive, CompatForward,
	CompatForwardTransitive, CompatFull, CompatFullTransitive}

// parseCompatibility accepts a level in any case and returns it upper case.
func parseCompatibility(s string) (string, bool) {
	up := strings.ToUpper(strings.TrimSpace(s))
	for _, l := range compatLevels {
		if up == l {
			return l, true
		}
	}
	return "", false
}

// checkedAgainst picks, from a subject's live versions (oldest first), the
// ones a new schema is checked against at level: the latest alone, or all
// of them for the _TRANSITIVE levels.
func checkedAgainst(level string, versions []*schemaVersion) []*schemaVersion {
	if level == CompatNone || len(versions) == 0 {
		return nil
	}
	if strings.HasSuffix(level, "_TRANSITIVE") {
		return versions
	}
	return versions[len(versions)-1:]
}

// compatibilityProblems checks candidate against one existing schema at
// level and describes each problem; none means compatible. BACKWARD: a
// reader of candidate reads data written with existing. FORWARD: a reader
// of existing reads data written with candidate. FULL: both.
func compatibilityProblems(level string, candidate, existing *parsedSchema, existingVersion int) []string {
	if candidate.typ != existing.typ {
		return []string{fmt.Sprintf("schema type %s differs from version %d's %s", candidate.typ, existingVersion, existing.typ)}
	}
	var problems []string
	base := strings.TrimSuffix(level, "_TRANSITIVE")
	if base == CompatBackward || base == CompatFull {
		for _, p := range readProblems(candidate, existing) {
			problems = append(problems, fmt.Sprintf("BACKWARD: the new schema cannot read data written with version %d: %s", existingVersion, p))
		}
	}
	if base == CompatForward || base == CompatFull {
		for _, p := range readProblems(existing, candidate) {
			problems = append(problems, fmt.Sprintf("FORWARD: version %d cannot read data written with the new schema: %s", existingVersion, p))
		}
	}
	return problems
}

// readProblems says why a reader with schema reader cannot read data
// written with schema writer.
func readProblems(reader, writer *parsedSchema) []string {
	switch reader.typ {
	case TypeAvro:
		if err := avro.NewSchemaCompatibility().Compatible(reader.avro, writer.avro); err != nil {
			return []string{err.Error()}
		}
		return nil
	case TypeProtobuf:
		return protobufReadProblems(reader.proto, writer.proto)
	case TypeJSON:
		return jsonReadProblems(reader.json, writer.json)
	}
	return []string{"unknown schema type " + reader.typ}
}
