// Package confluent is the differential test of Sluice's Schema Registry
// converters against Confluent's own serializers (confluent-kafka for
// Python, installed from PyPI into a virtualenv), on Apache Kafka
// (SLUICE_TEST_BOOTSTRAP) with Sluice's Schema Registry (`sluice
// schema-registry`):
//
//   - Confluent's AvroSerializer, JSONSerializer and ProtobufSerializer
//     produce records; a Sluice FileStream sink and a JDBC sink into
//     PostgreSQL decode them with AvroConverter, JsonSchemaConverter and
//     ProtobufConverter, and every field of every row is checked.
//   - A Sluice JDBC source writes a table with AvroConverter,
//     JsonSchemaConverter and ProtobufConverter; Confluent's
//     AvroDeserializer, JSONDeserializer and ProtobufDeserializer read the
//     records back, checked field for field against the table.
//
// It needs Python 3 with venv, network access to PyPI (or a pip cache),
// Apache Kafka and PostgreSQL; it fails, never skips, when one is missing.
// Run it with `just confluent` or
//
//	SLUICE_TEST_BOOTSTRAP=127.0.0.1:9092 go test -tags confluent -count=1 ./test/confluent/
//
// Without the build tag the package has no tests, so that `go test ./...`
// stays hermetic.
package confluent
