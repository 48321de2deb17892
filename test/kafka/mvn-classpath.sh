#!/usr/bin/env bash
# mvn-classpath.sh POM OUT [WHAT]: resolve the runtime dependencies of POM
# (a pom that builds nothing) into the local Maven cache (~/.m2), fetching
# what it lacks, write their classpath to OUT and print OUT. OUT is kept
# while it is newer than POM and every jar it names is still in the cache.
# WHAT names the jars in the progress message. test/kafka/kafka.sh and
# test/debezium/connect.sh run their JVMs from such a classpath.
set -euo pipefail

[ $# -ge 2 ] && [ $# -le 3 ] || { echo "usage: mvn-classpath.sh POM OUT [WHAT]" >&2; exit 2; }
pom=$1 cp=$2 what=${3:-the dependencies of $1}
# build-classpath of maven-dependency-plugin 2.x (Maven 3.8's default)
# skips writing a file it thinks unchanged; 3.x writes it.
dep_plugin=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

say() { printf 'mvn-classpath.sh: %s\n' "$*" >&2; }

mkdir -p "$(dirname "$cp")"
if [ -s "$cp" ] && [ "$cp" -nt "$pom" ]; then
  ok=1
  # The file has no final newline, so read reports end of file: not an error.
  IFS=: read -r -a jars <"$cp" || true
  for jar in "${jars[@]}"; do
    [ -f "$jar" ] || { ok=0; break; }
  done
  if [ "$ok" = 1 ]; then
    echo "$cp"
    exit 0
  fi
fi
command -v mvn >/dev/null 2>&1 || { say "mvn not found: install Maven 3 (apt-get install maven)"; exit 1; }
say "resolving $what with Maven (the first time fetches the jars from Maven Central; this can take a few minutes)"
# Not quiet: Maven's "Downloading ..." lines are the progress.
if ! mvn -B -f "$pom" "$dep_plugin:build-classpath" \
  -Dmdep.outputFile="$cp.tmp" -Dmdep.includeScope=runtime >&2; then
  rm -f "$cp.tmp"
  say "mvn could not resolve $pom"
  exit 1
fi
mv "$cp.tmp" "$cp"
say "classpath in $cp"
echo "$cp"
