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

# Format and vet.
lint:
    gofmt -l . | grep -v '\.pb\.go$' || true
    go vet ./...
