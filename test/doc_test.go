// Package test holds the integration tests that start real `sluice`
// processes (a broker and one or more workers), drive them over REST and
// the admin commands, and kill them with SIGKILL: the file round trip,
// failover, the REST contract, writes through any worker, and the
// PostgreSQL connectors. With SLUICE_TEST_BOOTSTRAP set they run against
// that Kafka instead of a `sluice broker` of their own.
package test
