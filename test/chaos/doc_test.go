// Package chaos is the chaos run: four real workers, Datagen sources and a
// FileStreamSink, with workers SIGKILLed and SIGTERMed at seeded random
// moments; it then checks that no record was lost and no task ran on two
// workers in one generation (see README.md, "Testing against Apache Kafka,
// and chaos").
package chaos
