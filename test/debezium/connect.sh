#!/usr/bin/env bash
# Debezium's PostgreSQL connector in Apache Kafka Connect (standalone), for
# the differential test of Sluice's CDC connector (test/debezium). The jars
# are those that test/debezium/pom.xml names: Maven fetches them into the
# local Maven cache (~/.m2) on first use.
#
#   connect.sh classpath      resolve the jars; print the classpath file
#   connect.sh run DIR BOOTSTRAP REST_PORT CONNECTOR_PROPERTIES...
#                             run Connect standalone in the foreground (the
#                             script execs the JVM: its pid is the worker's)
#                             with the connectors of the properties files,
#                             against the broker at BOOTSTRAP, its REST API
#                             on 127.0.0.1:REST_PORT. The test runs this.
#   connect.sh start DIR BOOTSTRAP REST_PORT CONNECTOR_PROPERTIES...
#                             the same in the background, logging to
#                             DIR/connect.log; return once the REST API
#                             answers GET /connectors
#   connect.sh stop DIR       SIGTERM the worker started in DIR, SIGKILL if it
#                             has not exited after 30 s
#
# DIR holds worker.properties and the source offsets (DIR/offsets); with
# start also the worker's log (DIR/connect.log) and pid (DIR/connect.pid).
#
# Every jar, Debezium's included, is on the JVM's classpath, so the worker
# needs no plugin.path: Connect finds connectors and converters on the
# classpath as well as in plugin directories.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache="$(cd "$here/.." && pwd)/.debezium"
say() { printf 'connect.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# classpath_file resolves the pom's dependencies (fetching what the local
# Maven cache lacks) and prints the file holding the classpath.
classpath_file() {
  bash "$here/../kafka/mvn-classpath.sh" "$here/pom.xml" "$cache/classpath.txt" "Apache Kafka Connect and Debezium"
}

# port_open reports whether something accepts TCP connections on 127.0.0.1:$1.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# rest_ready reports whether Connect's REST API on 127.0.0.1:$1 answers
# GET /connectors with 200: its HTTP server listens, and answers 404,
# before the worker has started.
rest_ready() {
  local status
  status=$( (exec 3<>"/dev/tcp/127.0.0.1/$1" &&
    printf 'GET /connectors HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 &&
    head -n 1 <&3) 2>/dev/null) || return 1
  [[ "$status" == "HTTP/1."?" 200"* ]]
}

# prepare DIR BOOTSTRAP REST_PORT CONNECTOR_PROPERTIES... checks the
# arguments, writes DIR/worker.properties and sets JAVA to the worker's
# command line.
prepare() {
  [ $# -ge 4 ] || die "usage: connect.sh run|start DIR BOOTSTRAP REST_PORT CONNECTOR_PROPERTIES..."
  local dir=$1 bootstrap=$2 port=$3 props cpfile
  shift 3
  [[ "$port" =~ ^[0-9]+$ ]] || die "REST_PORT must be a number, not '$port'"
  for props in "$@"; do
    [ -f "$props" ] || die "no connector properties file $props"
  done
  ! port_open "$port" || die "127.0.0.1:$port is already in use"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  cat >"$dir/worker.properties" <<PROPS
# Written by test/debezium/connect.sh: a standalone worker with the JSON
# converter and its schema envelope for keys and values, which the test
# reads (and gives Sluice's worker too).
bootstrap.servers=$bootstrap
key.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter=org.apache.kafka.connect.json.JsonConverter
value.converter.schemas.enable=true
offset.storage.file.filename=$dir/offsets
offset.flush.interval.ms=1000
listeners=http://127.0.0.1:$port
PROPS
  cpfile=$(classpath_file)
  # A small heap: a few connectors of one task each on a test workload.
  JAVA=(java -Xms64m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true
    -Dorg.slf4j.simpleLogger.defaultLogLevel=info
    -Dorg.slf4j.simpleLogger.showDateTime=true
    -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS
    -cp "$(cat "$cpfile")" org.apache.kafka.connect.cli.ConnectStandalone
    "$dir/worker.properties" "$@")
}

cmd_run() {
  prepare "$@"
  say "running Apache Kafka Connect with ${*:4} in the foreground"
  exec "${JAVA[@]}"
}

cmd_start() {
  [ $# -ge 4 ] || die "usage: connect.sh start DIR BOOTSTRAP REST_PORT CONNECTOR_PROPERTIES..."
  local dir port=$3 pid deadline
  mkdir -p "$1"
  dir=$(cd "$1" && pwd)
  if [ -f "$dir/connect.pid" ] && kill -0 "$(cat "$dir/connect.pid")" 2>/dev/null; then
    die "a worker already runs from $dir (pid $(cat "$dir/connect.pid"))"
  fi
  prepare "$dir" "${@:2}"
  say "starting Apache Kafka Connect with ${*:4} (log: $dir/connect.log)"
  nohup "${JAVA[@]}" >"$dir/connect.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$dir/connect.pid"
  deadline=$((SECONDS + 120))
  until rest_ready "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$dir/connect.log" >&2 || true
      rm -f "$dir/connect.pid"
      die "Apache Kafka Connect exited during startup"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 40 "$dir/connect.log" >&2 || true
      cmd_stop "$dir"
      die "Apache Kafka Connect's REST API did not answer within 120 s"
    fi
    sleep 0.2
  done
  say "Apache Kafka Connect up, REST API on 127.0.0.1:$port (pid $pid)"
}

cmd_stop() {
  [ $# -eq 1 ] || die "usage: connect.sh stop DIR"
  local dir=$1 pid i
  if [ ! -f "$dir/connect.pid" ]; then
    say "no worker pid in $dir"
    return 0
  fi
  pid=$(cat "$dir/connect.pid")
  if kill -TERM "$pid" 2>/dev/null; then
    say "stopping Apache Kafka Connect (pid $pid)"
    for i in $(seq 1 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      say "still running after 30 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$dir/connect.pid"
}

case "${1:-}" in
classpath)
  shift
  [ $# -eq 0 ] || die "usage: connect.sh classpath"
  classpath_file
  ;;
run)
  shift
  cmd_run "$@"
  ;;
start)
  shift
  cmd_start "$@"
  ;;
stop)
  shift
  cmd_stop "$@"
  ;;
*)
  die "usage: connect.sh classpath | run|start DIR BOOTSTRAP REST_PORT CONNECTOR_PROPERTIES... | stop DIR"
  ;;
esac
