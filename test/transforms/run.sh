#!/usr/bin/env bash
# Runs the differential test's cases through Apache Kafka Connect's own
# transforms (see README.md):
#
#   bash test/transforms/run.sh CASES.json OUT.json
#
# Maven builds the harness (test/transforms/pom.xml) and resolves Apache
# Kafka 4.1.1's jars into the local Maven cache (~/.m2) the first time; the
# build is redone only when the pom or a source file is newer than it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# build-classpath of maven-dependency-plugin 2.x (Maven 3.8's default)
# skips writing a file it thinks unchanged; 3.x writes it.
dep_plugin=org.apache.maven.plugins:maven-dependency-plugin:3.8.1

die() { printf 'run.sh: %s\n' "$*" >&2; exit 1; }

[ $# -eq 2 ] || die "usage: run.sh CASES.json OUT.json"
cases=$1 out=$2
[ -f "$cases" ] || die "$cases: no such file"
command -v java >/dev/null 2>&1 || die "java not found: install a JDK 17 (apt-get install openjdk-17-jdk-headless)"

target="$here/target"
cp="$target/classpath.txt"
stamp="$target/classes/.built"
if [ ! -f "$stamp" ] || [ ! -s "$cp" ] ||
  [ -n "$(find "$here/pom.xml" "$here/src" -newer "$stamp" -print -quit)" ]; then
  command -v mvn >/dev/null 2>&1 || die "mvn not found: install Maven 3 (apt-get install maven)"
  # Debian's Maven 3.8 writes colour resets even when quiet; they go.
  mvn -q -B -Dstyle.color=never -f "$here/pom.xml" compile "$dep_plugin:build-classpath" \
    -Dmdep.outputFile="$cp" -Dmdep.includeScope=runtime 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2 ||
    die "mvn could not build test/transforms"
  touch "$stamp"
fi

exec java -Duser.timezone=UTC -Duser.language=en -Duser.country=US -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
  -cp "$target/classes:$(cat "$cp")" io.sluice.transforms.Harness "$cases" "$out"
