# Sluice recipes. `just` comes from `npm install -g rust-just`.
# The two everyday commands need no just: `go run ./cmd/sluice dev` and `go test ./...`.

default:
    @just --list

# Run the development cluster: embedded broker, one worker, REST on :8083.
dev *ARGS:
    go run ./cmd/sluice dev {{ARGS}}

# Build the binary into ./bin/sluice.
build:
    mkdir -p bin && go build -o bin/sluice ./cmd/sluice

# The hermetic suite with the race detector, as CI runs it.
test:
    go test -race -count=1 ./...

# What CI runs on every submission.
ci:
    bash .ci/run

# Benchmarks: Datagen -> Kafka throughput as a ratio of the raw franz-go
# producer, and the memory cost of an idle task actor.
bench:
    go test -run '^$' -bench . -benchtime 3x -count 1 ./bench/

# Sluice and Apache Kafka Connect side by side on one Apache Kafka (over an hour;
# --smoke takes minutes); writes bench/results/README.md and its plots.
# See `go run ./bench/connect --help`.
bench-connect *ARGS:
    go run ./bench/connect {{ARGS}}

# Sluice's PostgreSQL CDC against Debezium 3.6.1 in Apache Kafka Connect, on
# one PostgreSQL and one Apache Kafka (about half an hour); writes
# bench/results/debezium/README.md. See `go run ./bench/debezium --help`.
bench-debezium *ARGS:
    go run ./bench/debezium {{ARGS}}

# Format and vet.
lint:
    gofmt -l . | grep -v '\.pb\.go$' || true
    go vet ./...

# KRaft, broker and controller in one JVM, data kept in test/.kafka/dev; the
# first run fetches Kafka's jars with Maven (see test/kafka/kafka.sh).
# Run Apache Kafka on 127.0.0.1:9092 in the foreground until Ctrl-C.
kafka:
    bash test/kafka/kafka.sh run 9092 test/.kafka/dev

# The broker gets a free port and a temporary directory, and is stopped
# however the suite ends.
# The integration suite against a fresh Apache Kafka (SLUICE_TEST_BOOTSTRAP), its
# SASL_SSL and SASL_PLAINTEXT listeners included (test/kafka/kafka.sh's secure.env).
test-kafka:
    #!/usr/bin/env bash
    set -euo pipefail
    dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-kafka-XXXXXX")
    { read -r port; read -r sasl_ssl_port; read -r sasl_plaintext_port; } < <(go run ./test/kafka/freeport 3)
    trap 'bash test/kafka/kafka.sh stop "$dir"; rm -rf "$dir"' EXIT
    bash test/kafka/kafka.sh start "$port" "$dir" "$sasl_ssl_port" "$sasl_plaintext_port"
    set -a; . "$dir/secure.env"; set +a
    SLUICE_TEST_BOOTSTRAP="127.0.0.1:$port" go test -count=1 ./internal/kafkatest/ ./internal/actors/ ./internal/state/ ./internal/control/... ./internal/rest/ ./internal/admin/ ./internal/worker/ ./internal/cluster/... ./internal/offsets/ ./internal/topics/ ./test/

# Needs python3 with venv and PyPI (the virtualenv is kept in ~/.cache/sluice);
# the broker gets a free port and a temporary directory, stopped however the test ends.
# Sluice's registry converters against Confluent's own Python serializers (test/confluent).
confluent:
    #!/usr/bin/env bash
    set -euo pipefail
    dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-kafka-XXXXXX")
    port=$(go run ./test/kafka/freeport 1)
    trap 'bash test/kafka/kafka.sh stop "$dir"; rm -rf "$dir"' EXIT
    bash test/kafka/kafka.sh start "$port" "$dir"
    SLUICE_TEST_BOOTSTRAP="127.0.0.1:$port" go test -tags confluent -count=1 -v ./test/confluent/

# Kafka's jars and the harness are built by Maven (test/transforms) on first use.
# Regenerate the transforms' golden file (connectors/transforms/testdata/expected.json) from Apache Kafka's own transforms.
transforms-golden:
    bash test/transforms/golden.sh

# The broker gets a free port and a temporary directory; Maven fetches Kafka
# Connect and Debezium on first use (test/debezium/connect.sh).
# CDC differential test: Sluice's PostgreSQL CDC against Debezium in Apache Kafka Connect.
debezium-diff:
    #!/usr/bin/env bash
    set -euo pipefail
    dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-kafka-XXXXXX")
    port=$(go run ./test/kafka/freeport 1)
    trap 'bash test/kafka/kafka.sh stop "$dir"; rm -rf "$dir"' EXIT
    bash test/kafka/kafka.sh start "$port" "$dir"
    SLUICE_TEST_BOOTSTRAP="127.0.0.1:$port" go test -tags debezium -count=1 -v ./test/debezium/

# DURATION (default 3m) sets how long; SLUICE_CHAOS_SEED replays a run,
# SLUICE_TEST_BOOTSTRAP runs it against an external broker, and
# SLUICE_CHAOS_REPORT says where the JSON summary goes.
# Chaos run: workers SIGKILLed and SIGTERMed at seeded random moments; no record may be lost.
chaos:
    SLUICE_CHAOS_DURATION=${DURATION:-3m} go test -count=1 -v -timeout 30m ./test/chaos/

# The same run with exactly-once sources: every sequence number exactly once to a read_committed consumer.
chaos-eos:
    SLUICE_CHAOS_EOS=1 SLUICE_CHAOS_DURATION=${DURATION:-3m} go test -count=1 -v -timeout 30m ./test/chaos/

# Regenerate internal/controlpb's protobuf code (installs protoc and protoc-gen-go if missing).
proto:
    command -v protoc >/dev/null || (apt-get update -qq && apt-get install -y -qq protobuf-compiler)
    go install google.golang.org/protobuf/cmd/protoc-gen-go@$(go list -m -f '{{{{.Version}}' google.golang.org/protobuf)
    cd internal/controlpb && protoc --plugin=protoc-gen-go=$(go env GOPATH)/bin/protoc-gen-go --go_out=. --go_opt=paths=source_relative control.proto
