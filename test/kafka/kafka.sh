#!/usr/bin/env bash
# Apache Kafka on demand for the integration suite: a single KRaft node
# (broker and controller in one JVM) on loopback, run from the jars that
# test/kafka/pom.xml names, which Maven fetches into the local Maven cache
# (~/.m2) on first use.
#
#   kafka.sh classpath        resolve the jars; print the classpath file
#   kafka.sh start PORT DIR   format DIR and start a node in the background on
#                             127.0.0.1:PORT; return once it answers
#   kafka.sh run PORT DIR     the same in the foreground, until Ctrl-C
#   kafka.sh stop DIR         SIGTERM the node started in DIR, SIGKILL if it
#                             has not exited after 30 s
#
# DIR holds server.properties, the data (DIR/data), the broker's log
# (DIR/kafka.log) and its pid (DIR/kafka.pid). A DIR that was formatted
# before is started as it is, so `run` on the same DIR keeps its topics.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache="$(cd "$here/.." && pwd)/.kafka"
# build-classpath of maven-dependency-plugin 2.x (Maven 3.8's default)
# skips writing a file it thinks unchanged; 3.x writes it.
dep_plugin=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

say() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# classpath_file resolves the pom's dependencies (fetching what the local
# Maven cache lacks) and prints the file holding the classpath. It is
# rebuilt when the pom changes or a jar it names has gone from the cache.
classpath_file() {
  local cp="$cache/classpath.txt"
  mkdir -p "$cache"
  if [ -s "$cp" ] && [ "$cp" -nt "$here/pom.xml" ]; then
    local ok=1 jar
    IFS=: read -r -a jars <"$cp"
    for jar in "${jars[@]}"; do
      [ -f "$jar" ] || { ok=0; break; }
    done
    if [ "$ok" = 1 ]; then
      echo "$cp"
      return
    fi
  fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found: install Maven 3 (apt-get install maven)"
  say "resolving Apache Kafka with Maven (the first time fetches about 40 jars from Maven Central; this can take a few minutes)"
  # Not quiet: Maven's "Downloading ..." lines are the progress.
  if ! mvn -B -f "$here/pom.xml" "$dep_plugin:build-classpath" \
    -Dmdep.outputFile="$cp.tmp" -Dmdep.includeScope=runtime >&2; then
    rm -f "$cp.tmp"
    die "mvn could not resolve test/kafka/pom.xml"
  fi
  mv "$cp.tmp" "$cp"
  say "classpath in $cp"
  echo "$cp"
}

# port_open reports whether something accepts TCP connections on 127.0.0.1:$1.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port prints a loopback port nothing listens on, other than $1.
free_port() {
  local p i
  for i in $(seq 1 200); do
    p=$((20000 + RANDOM % 40000))
    if [ "$p" != "$1" ] && ! port_open "$p"; then
      echo "$p"
      return
    fi
  done
  die "no free port found"
}

# set_java sets the array JAVA to the JVM command line, classpath included.
set_java() {
  local cpfile
  cpfile=$(classpath_file)
  # A modest heap: the node serves a test suite, not production load.
  JAVA=(java -Xms128m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true
    -Dorg.slf4j.simpleLogger.defaultLogLevel=info
    -Dorg.slf4j.simpleLogger.showDateTime=true
    -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS
    -cp "$(cat "$cpfile")")
}

# prepare PORT DIR writes DIR/server.properties and formats DIR/data unless
# it was formatted before.
prepare() {
  local port=$1 dir=$2 cport
  [[ "$port" =~ ^[0-9]+$ ]] || die "PORT must be a number, not '$port'"
  mkdir -p "$dir"
  if port_open "$port"; then
    die "127.0.0.1:$port is already in use"
  fi
  cport=$(free_port "$port")
  cat >"$dir/server.properties" <<EOF
# Written by test/kafka/kafka.sh: one combined KRaft broker and controller.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
  set_java
  if [ ! -f "$dir/data/meta.properties" ]; then
    local id
    id=$("${JAVA[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)
    [ -n "$id" ] || die "kafka.tools.StorageTool random-uuid printed nothing"
    say "formatting $dir/data (cluster id $id)"
    "${JAVA[@]}" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
      die "format failed: $(cat "$dir/format.log")"
  fi
}

# wait_up PORT DIR PID waits until the broker serves: the server says it
# started and the port accepts connections (the port alone is not enough,
# it is bound before the broker serves). It fails when the process exits.
wait_up() {
  local port=$1 dir=$2 pid=$3 deadline=$((SECONDS + 120))
  until grep -q 'Kafka Server started' "$dir/kafka.log" 2>/dev/null && port_open "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 40 "$dir/kafka.log" >&2 || true
      cmd_stop "$dir"
      die "Apache Kafka did not come up within 120 s"
    fi
    sleep 0.2
  done
}

cmd_start() {
  [ $# -eq 2 ] || die "usage: kafka.sh start PORT DIR"
  local port=$1 dir
  mkdir -p "$2"
  dir=$(cd "$2" && pwd)
  if [ -f "$dir/kafka.pid" ] && kill -0 "$(cat "$dir/kafka.pid")" 2>/dev/null; then
    die "a broker already runs from $dir (pid $(cat "$dir/kafka.pid"))"
  fi
  # The controller's port is picked free, but another process can take it
  # before the broker binds it (a busy CI machine): then try another one.
  local attempt pid
  for attempt in 1 2 3; do
    prepare "$port" "$dir"
    say "starting Apache Kafka on 127.0.0.1:$port (log: $dir/kafka.log)"
    nohup "${JAVA[@]}" kafka.Kafka "$dir/server.properties" >"$dir/kafka.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/kafka.pid"
    if wait_up "$port" "$dir" "$pid"; then
      break
    fi
    rm -f "$dir/kafka.pid"
    if [ "$attempt" -lt 3 ] && grep -q "CONTROLLER.*Address already in use\|bind to 127.0.0.1:[0-9]*: Address already in use" "$dir/kafka.log" &&
      ! port_open "$port"; then
      say "the controller's port was taken meanwhile; trying another one"
      continue
    fi
    tail -n 40 "$dir/kafka.log" >&2 || true
    die "Apache Kafka exited during startup"
  done
  say "Apache Kafka up on 127.0.0.1:$port (pid $pid)"
}

cmd_run() {
  [ $# -eq 2 ] || die "usage: kafka.sh run PORT DIR"
  local port=$1 dir
  mkdir -p "$2"
  dir=$(cd "$2" && pwd)
  prepare "$port" "$dir"
  say "running Apache Kafka on 127.0.0.1:$port in the foreground (data: $dir/data); Ctrl-C stops it"
  exec "${JAVA[@]}" kafka.Kafka "$dir/server.properties"
}

cmd_stop() {
  [ $# -eq 1 ] || die "usage: kafka.sh stop DIR"
  local dir=$1 pid i
  if [ ! -f "$dir/kafka.pid" ]; then
    say "no broker pid in $dir"
    return 0
  fi
  pid=$(cat "$dir/kafka.pid")
  if kill -TERM "$pid" 2>/dev/null; then
    say "stopping Apache Kafka (pid $pid)"
    for i in $(seq 1 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      say "still running after 30 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
    fi
  fi
  rm -f "$dir/kafka.pid"
}

case "${1:-}" in
classpath)
  shift
  [ $# -eq 0 ] || die "usage: kafka.sh classpath"
  classpath_file
  ;;
start)
  shift
  cmd_start "$@"
  ;;
run)
  shift
  cmd_run "$@"
  ;;
stop)
  shift
  cmd_stop "$@"
  ;;
*)
  die "usage: kafka.sh classpath | start PORT DIR | run PORT DIR | stop DIR"
  ;;
esac
