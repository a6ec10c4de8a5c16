#!/usr/bin/env bash
# RabbitMQ's PerfTest (the tool RabbitMQ's published throughput figures come from), for
# the delivery bench's `perftest` variants: the jar and its runtime dependencies from
# Maven Central, and a launcher `$PERFTEST_HOME/perf-test` (arguments as PerfTest's own).
# Cached in /var/tmp like the cargo target. Idempotent: returns at once when the launcher
# of this version is there.
#
#   tools/perftest/install.sh            # then: /var/tmp/conveyor-perftest/perf-test --help
#
# Env: PERFTEST_HOME (default /var/tmp/conveyor-perftest), PERFTEST_VERSION (2.22.1),
#      PERFTEST_M2 Maven local repository (default /var/tmp/conveyor-m2, shared with
#      tools/opensearch-node), JAVA or JAVA_HOME (Java 11+; 17 runs here), MVN (mvn).
#      The launcher passes PERFTEST_JAVA_OPTS to java (e.g. -Xmx512m).
set -euo pipefail

HOME_DIR=${PERFTEST_HOME:-/var/tmp/conveyor-perftest}
VERSION=${PERFTEST_VERSION:-2.22.1}
M2=${PERFTEST_M2:-/var/tmp/conveyor-m2}
MVN=${MVN:-mvn}
if [ -n "${JAVA:-}" ]; then :; elif [ -n "${JAVA_HOME:-}" ]; then JAVA=$JAVA_HOME/bin/java; else JAVA=java; fi
LAUNCHER=$HOME_DIR/perf-test

if [ -x "$LAUNCHER" ] && [ -f "$HOME_DIR/lib/perf-test-$VERSION.jar" ]; then
  echo "PerfTest $VERSION ready: $LAUNCHER"
  exit 0
fi

command -v "$MVN" >/dev/null 2>&1 || { echo "perftest: $MVN not found (apt-get install maven)" >&2; exit 1; }
command -v "$JAVA" >/dev/null 2>&1 || { echo "perftest: $JAVA not found (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }

# A throwaway project whose one dependency is PerfTest: Maven resolves its runtime
# dependencies (amqp-client, commons-cli, micrometer, logback, ...) and copies them, the
# PerfTest jar with them, into lib/. Built beside the final folder, moved in at the end,
# so an interrupted run leaves nothing half made.
mkdir -p "$(dirname "$HOME_DIR")"
HOME_DIR=$(cd "$(dirname "$HOME_DIR")" && pwd)/$(basename "$HOME_DIR") # the launcher names it
LAUNCHER=$HOME_DIR/perf-test
WORK=$(mktemp -d "$HOME_DIR.tmp.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>conveyor.tools</groupId>
  <artifactId>perftest-deps</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>com.rabbitmq</groupId>
      <artifactId>perf-test</artifactId>
      <version>$VERSION</version>
    </dependency>
  </dependencies>
</project>
POM
echo "perftest: resolving com.rabbitmq:perf-test:$VERSION and its runtime dependencies"
if ! "$MVN" -q -B -Dstyle.color=never -f "$WORK/pom.xml" -Dmaven.repo.local="$M2" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$WORK/home/lib" \
  >"$WORK/mvn.log" 2>&1; then
  echo "perftest: mvn dependency:copy-dependencies failed:" >&2
  tail -n 40 "$WORK/mvn.log" >&2
  exit 1
fi
[ -f "$WORK/home/lib/perf-test-$VERSION.jar" ] || { echo "perftest: perf-test-$VERSION.jar not copied" >&2; exit 1; }

cat >"$WORK/home/perf-test" <<LAUNCH
#!/usr/bin/env bash
# PerfTest $VERSION, installed by tools/perftest/install.sh.
exec "$JAVA" \${PERFTEST_JAVA_OPTS:-} -cp "$HOME_DIR/lib/*" com.rabbitmq.perf.PerfTest "\$@"
LAUNCH
chmod +x "$WORK/home/perf-test"

rm -rf "$HOME_DIR"
mv "$WORK/home" "$HOME_DIR"
"$LAUNCHER" --help >/dev/null || { echo "perftest: $LAUNCHER --help failed" >&2; exit 1; }
echo "PerfTest $VERSION installed: $LAUNCHER ($(ls "$HOME_DIR/lib" | wc -l) jars)"
