// Package transforms holds Kafka Connect's single message transforms and
// predicates, under their Connect class names
// (org.apache.kafka.connect.transforms.*), ported from Apache Kafka 4.1 so
// that a connector config written for Connect transforms records the same
// way, errors included. Plugins returns them for a connectors.Registry;
// connectors/builtin registers them.
//
// A transform with $Key and $Value variants is written once over a part
// (keyPart or valuePart) and registered twice. Transforms never modify the
// values a record points to: they build new structs, maps and schemas.
// Schemas they derive are cached per input schema, as Connect's are, so a
// stream of records of one schema converts its schema once.
//
// Each transform is checked against Apache Kafka's own classes by the
// differential test (differential_test.go, test/transforms).
package transforms
