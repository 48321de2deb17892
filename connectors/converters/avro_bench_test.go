package converters

import "testing"

// BenchmarkAvroFromConnectStruct is the record path of the Avro
// benchmark (bench/avro_test.go) without Kafka: Datagen's struct to a
// framed Avro datum, the registry answered from the cache.
func BenchmarkAvroFromConnectStruct(b *testing.B) {
	reg := newCountingRegistry(b)
	c := avroConv(b, reg, false, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.FromConnect("t", datagenSchema, datagenValue); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAvroToConnectStruct(b *testing.B) {
	reg := newCountingRegistry(b)
	c := avroConv(b, reg, false, nil)
	data, err := c.FromConnect("t", datagenSchema, datagenValue)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.ToConnect("t", data); err != nil {
			b.Fatal(err)
		}
	}
}
