#!/usr/bin/env bash
# Apache Kafka on demand for the integration suite: a single KRaft node
# (broker and controller in one JVM) on loopback, run from the jars that
# test/kafka/pom.xml names, which Maven fetches into the local Maven cache
# (~/.m2) on first use.
#
#   kafka.sh classpath        resolve the jars; print the classpath file
#   kafka.sh start PORT DIR [SASL_SSL_PORT SASL_PLAINTEXT_PORT]
#                             format DIR and start a node in the background on
#                             127.0.0.1:PORT; return once it answers
#   kafka.sh run PORT DIR [SASL_SSL_PORT SASL_PLAINTEXT_PORT]
#                             the same in the foreground, until Ctrl-C
#   kafka.sh stop DIR         SIGTERM the node started in DIR, SIGKILL if it
#                             has not exited after 30 s
#
# DIR holds server.properties, the data (DIR/data), the broker's log
# (DIR/kafka.log) and its pid (DIR/kafka.pid). A DIR that was formatted
# before is started as it is, so `run` on the same DIR keeps its topics.
#
# With the two optional ports the node also has a SASL_SSL and a
# SASL_PLAINTEXT listener (PLAINTEXT stays, for the suites that use it,
# and between brokers). Both take PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
# with the users of sasl_users below: the SCRAM ones are created when DIR
# is formatted, the PLAIN ones are in the listeners' JAAS config. The TLS
# certificate and stores are generated with Go's crypto
# (test/kafka/gencerts) into DIR/tls. DIR/secure.env then holds, as
# KEY=VALUE lines, what the tests need to reach those listeners:
#   SLUICE_TEST_SASL_SSL_BOOTSTRAP, SLUICE_TEST_SASL_PLAINTEXT_BOOTSTRAP,
#   SLUICE_TEST_TLS_DIR, SLUICE_TEST_SASL_USERS (MECHANISM:user:password,...)
# No authorizer is configured: every authenticated user may do anything.
# The SCRAM users exist only in a DIR first formatted with the secure ports.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache="$(cd "$here/.." && pwd)/.kafka"
say() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# classpath_file resolves the pom's dependencies (fetching what the local
# Maven cache lacks) and prints the file holding the classpath. It is
# rebuilt when the pom changes or a jar it names has gone from the cache.
classpath_file() {
  bash "$here/mvn-classpath.sh" "$here/pom.xml" "$cache/classpath.txt" "Apache Kafka"
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

# sasl_users are the secure listeners' users, MECHANISM:user:password.
# Two SCRAM-SHA-512 users, so that a test can run a connector's clients as
# another user than its worker's. Names are plain words: PLAIN users
# become JAAS option names (user_NAME).
sasl_users=(
  SCRAM-SHA-512:sluice512:sluice512-secret
  SCRAM-SHA-512:sluiceother:sluiceother-secret
  SCRAM-SHA-256:sluice256:sluice256-secret
  PLAIN:sluiceplain:sluiceplain-secret
)

# secure_properties LISTENER... prints the SASL settings of the listeners
# (lower-case listener names): each mechanism's JAAS config, the PLAIN one
# listing the PLAIN users.
secure_properties() {
  local l u mech name pass plain=""
  for u in "${sasl_users[@]}"; do
    IFS=: read -r mech name pass <<<"$u"
    if [ "$mech" = PLAIN ]; then
      plain+=" user_$name=\"$pass\""
    fi
  done
  echo "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
  for l in "$@"; do
    echo "listener.name.$l.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$plain;"
    echo "listener.name.$l.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
    echo "listener.name.$l.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
  done
}

# scram_format_args prints StorageTool format's --add-scram arguments, one
# a line, for the SCRAM users.
scram_format_args() {
  local u mech name pass
  for u in "${sasl_users[@]}"; do
    IFS=: read -r mech name pass <<<"$u"
    case "$mech" in
    SCRAM-*) printf -- '--add-scram\n%s=[name=%s,password=%s]\n' "$mech" "$name" "$pass" ;;
    esac
  done
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

# check_ports PORT... fails unless each is a number nothing listens on,
# and no two are the same.
check_ports() {
  local p seen=" "
  for p in "$@"; do
    [[ "$p" =~ ^[0-9]+$ ]] || die "ports must be numbers, not '$p'"
    [[ "$seen" != *" $p "* ]] || die "port $p is given twice"
    seen+="$p "
    if port_open "$p"; then
      die "127.0.0.1:$p is already in use"
    fi
  done
}

# prepare PORT DIR [SASL_SSL_PORT SASL_PLAINTEXT_PORT] writes
# DIR/server.properties (and with the secure ports DIR/tls and
# DIR/secure.env) and formats DIR/data unless it was formatted before.
prepare() {
  local port=$1 dir=$2 sslport=${3:-} saslport=${4:-} cport listeners protocols
  mkdir -p "$dir"
  check_ports "$port" $sslport $saslport
  cport=$(free_port "$port")
  while [ "$cport" = "$sslport" ] || [ "$cport" = "$saslport" ]; do
    cport=$(free_port "$port")
  done
  listeners="PLAINTEXT://127.0.0.1:$port"
  protocols="PLAINTEXT:PLAINTEXT"
  if [ -n "$sslport" ]; then
    listeners+=",SASL_SSL://127.0.0.1:$sslport,SASL_PLAINTEXT://127.0.0.1:$saslport"
    protocols+=",SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
  fi
  cat >"$dir/server.properties" <<EOF
# Written by test/kafka/kafka.sh: one combined KRaft broker and controller.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=$listeners,CONTROLLER://127.0.0.1:$cport
advertised.listeners=$listeners
listener.security.protocol.map=$protocols,CONTROLLER:PLAINTEXT
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
  # More broker properties, one per line (bench/connect sets
  # log.segment.delete.delay.ms=1000): later lines win in Kafka's properties.
  if [ -n "${SLUICE_KAFKA_PROPERTIES:-}" ]; then
    printf '%s\n' "$SLUICE_KAFKA_PROPERTIES" >>"$dir/server.properties"
  fi
  local scram=()
  if [ -n "$sslport" ]; then
    say "generating the TLS certificate and stores in $dir/tls"
    # gencerts prints the broker's ssl.* keystore properties.
    (cd "$here/../.." && go run ./test/kafka/gencerts "$dir/tls") >>"$dir/server.properties" ||
      die "test/kafka/gencerts failed"
    secure_properties sasl_ssl sasl_plaintext >>"$dir/server.properties"
    mapfile -t scram < <(scram_format_args)
    local users
    users=$(IFS=,; echo "${sasl_users[*]}")
    cat >"$dir/secure.env" <<EOF
SLUICE_TEST_SASL_SSL_BOOTSTRAP=127.0.0.1:$sslport
SLUICE_TEST_SASL_PLAINTEXT_BOOTSTRAP=127.0.0.1:$saslport
SLUICE_TEST_TLS_DIR=$dir/tls
SLUICE_TEST_SASL_USERS=$users
EOF
  else
    rm -f "$dir/secure.env"
  fi
  set_java
  if [ ! -f "$dir/data/meta.properties" ]; then
    local id
    id=$("${JAVA[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)
    [ -n "$id" ] || die "kafka.tools.StorageTool random-uuid printed nothing"
    say "formatting $dir/data (cluster id $id)"
    "${JAVA[@]}" kafka.tools.StorageTool format -t "$id" -c "$dir/server.properties" "${scram[@]}" >"$dir/format.log" 2>&1 ||
      die "format failed: $(cat "$dir/format.log")"
  fi
}

# ports_open PORT... reports whether every port accepts connections.
ports_open() {
  local p
  for p in "$@"; do
    port_open "$p" || return 1
  done
}

# wait_up DIR PID PORT... waits until the broker serves: the server says it
# started and the ports accept connections (a port alone is not enough,
# it is bound before the broker serves). It fails when the process exits.
wait_up() {
  local dir=$1 pid=$2 deadline=$((SECONDS + 120))
  shift 2
  until grep -q 'Kafka Server started' "$dir/kafka.log" 2>/dev/null && ports_open "$@"; do
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

# usage_ports CMD ARGS... checks that ARGS are PORT DIR, with or without
# the two secure ports.
usage_ports() {
  local cmd=$1
  shift
  [ $# -eq 2 ] || [ $# -eq 4 ] || die "usage: kafka.sh $cmd PORT DIR [SASL_SSL_PORT SASL_PLAINTEXT_PORT]"
}

cmd_start() {
  usage_ports start "$@"
  local port=$1 dir secure=("${@:3}")
  mkdir -p "$2"
  dir=$(cd "$2" && pwd)
  if [ -f "$dir/kafka.pid" ] && kill -0 "$(cat "$dir/kafka.pid")" 2>/dev/null; then
    die "a broker already runs from $dir (pid $(cat "$dir/kafka.pid"))"
  fi
  # The controller's port is picked free, but another process can take it
  # before the broker binds it (a busy CI machine): then try another one.
  local attempt pid
  for attempt in 1 2 3; do
    prepare "$port" "$dir" "${secure[@]}"
    say "starting Apache Kafka on 127.0.0.1:$port${secure:+ (SASL_SSL on ${secure[0]}, SASL_PLAINTEXT on ${secure[1]})} (log: $dir/kafka.log)"
    nohup "${JAVA[@]}" kafka.Kafka "$dir/server.properties" >"$dir/kafka.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/kafka.pid"
    if wait_up "$dir" "$pid" "$port" "${secure[@]}"; then
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
  usage_ports run "$@"
  local port=$1 dir
  mkdir -p "$2"
  dir=$(cd "$2" && pwd)
  prepare "$port" "$dir" "${@:3}"
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
  die "usage: kafka.sh classpath | start PORT DIR [SASL_SSL_PORT SASL_PLAINTEXT_PORT] | run PORT DIR [SASL_SSL_PORT SASL_PLAINTEXT_PORT] | stop DIR"
  ;;
esac
