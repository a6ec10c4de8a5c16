#!/usr/bin/env bash
# Start one real OpenSearch 2.19.6 node in the background, on 127.0.0.1 only, and wait until it answers.
# Idempotent: if the node of DATA_DIR is already running it only waits for it (instant when it is up).
#
#   start.sh [HTTP_PORT] [DATA_DIR] [BUILD_DIR]
#
# HTTP_PORT default $OSNODE_PORT, else 9200.
# DATA_DIR  node home (config/ data/ logs/ ...); also gets osnode.pid and osnode.log.
#           Default $OSNODE_DATA, else /var/tmp/conveyor-osnode/node-HTTP_PORT.
# BUILD_DIR where `mvn package` puts osnode.jar and lib/*.jar. Default $OSNODE_BUILD_DIR, else
#           /var/tmp/conveyor-osnode/build. Rebuilt when pom.xml or the launcher source changed (content hash).
# Env:      OSNODE_M2 Maven local repository (default /var/tmp/conveyor-m2, kept between runs),
#           JAVA_HOME or JAVA (java binary; OpenSearch 2.19 needs Java 11-21, 17 is what runs here),
#           OSNODE_HEAP (default 512m), OSNODE_TIMEOUT (seconds to wait, default 180), MVN (default mvn).
# Prints:   "READY http://127.0.0.1:PORT pid=PID ..." on success (exit 0); the reason and the log tail and
#           exit 1 otherwise (the node it started is then stopped again).
# Stop:     stop.sh [HTTP_PORT|DATA_DIR]
set -euo pipefail

PORT=${1:-${OSNODE_PORT:-9200}}
case $PORT in ''|*[!0-9]*) echo "usage: $0 [HTTP_PORT] [DATA_DIR] [BUILD_DIR]  (HTTP_PORT must be a number)" >&2; exit 2 ;; esac
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=${2:-${OSNODE_DATA:-/var/tmp/conveyor-osnode/node-$PORT}}
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)
BUILD=${3:-${OSNODE_BUILD_DIR:-/var/tmp/conveyor-osnode/build}}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
M2=${OSNODE_M2:-/var/tmp/conveyor-m2}
HEAP=${OSNODE_HEAP:-512m}
TIMEOUT=${OSNODE_TIMEOUT:-180}
if [ -n "${JAVA:-}" ]; then :; elif [ -n "${JAVA_HOME:-}" ]; then JAVA=$JAVA_HOME/bin/java; else JAVA=java; fi
URL=http://127.0.0.1:$PORT
PIDFILE=$DATA/osnode.pid
LOG=$DATA/osnode.log
T0=$(date +%s)

elapsed() { echo $(( $(date +%s) - T0 )); }
answers() { curl -fsS -o /dev/null --max-time 2 "$URL/" 2>/dev/null; }
# true if PID is alive and is an osnode JVM (guards against a stale pid file whose pid was reused)
is_osnode() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q 'osnode\.OsNode'; }
fail() { # MESSAGE [PID_TO_STOP]
  echo "osnode: $1; last lines of $LOG:" >&2
  if [ -f "$LOG" ]; then tail -n 40 "$LOG" >&2; fi
  if [ -n "${2:-}" ]; then
    kill "$2" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$2" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$2" 2>/dev/null || true
    rm -f "$PIDFILE"
  fi
  exit 1
}
# wait until GET / answers and the cluster is at least yellow; PID must stay alive meanwhile
wait_ready() { # PID WHAT
  while :; do
    if ! kill -0 "$1" 2>/dev/null; then
      rm -f "$PIDFILE"
      fail "the node (pid $1) exited before it was ready"
    fi
    if answers && curl -fsS -o /dev/null --max-time 5 \
         "$URL/_cluster/health?wait_for_status=yellow&timeout=3s" 2>/dev/null; then
      echo "READY $URL pid=$1 $2 after $(elapsed)s"
      exit 0
    fi
    if [ "$(elapsed)" -ge "$TIMEOUT" ]; then
      if [ "$2" = started ]; then fail "not ready after ${TIMEOUT}s (OSNODE_TIMEOUT); stopping pid $1" "$1"; fi
      fail "pid $1 is running but not ready after ${TIMEOUT}s (OSNODE_TIMEOUT); left running, see stop.sh"
    fi
    sleep 0.3
  done
}

# Fast path, no lock: already running for this DATA_DIR.
if [ -f "$PIDFILE" ] && is_osnode "$(cat "$PIDFILE" 2>/dev/null)"; then
  wait_ready "$(cat "$PIDFILE")" already-running
fi

# Serialize concurrent starts of the same DATA_DIR (the lock fd is closed for the JVM below).
exec 9>"$DATA/osnode.lock"
flock -w "$TIMEOUT" 9 || fail "could not lock $DATA/osnode.lock within ${TIMEOUT}s"
if [ -f "$PIDFILE" ]; then
  OLD=$(cat "$PIDFILE" 2>/dev/null || true)
  if is_osnode "$OLD"; then wait_ready "$OLD" already-running; fi
  rm -f "$PIDFILE" # stale
fi
if answers; then
  fail "$URL already answers but it is not the node of $DATA (no live pid in $PIDFILE): port $PORT is taken"
fi

# Build (quick no-op when the stamp matches). Content hash rather than mtimes, so a fresh clone reuses the build.
STAMP=$( (cat "$HERE/pom.xml"; find "$HERE/src" -type f -print0 | sort -z | xargs -0 cat) | sha256sum | cut -d' ' -f1)
JAR=$BUILD/osnode.jar
if [ ! -f "$JAR" ] || [ ! -d "$BUILD/lib" ] || [ "$(cat "$BUILD/.osnode-stamp" 2>/dev/null)" != "$STAMP" ]; then
  echo "osnode: building into $BUILD (Maven repository $M2) ..." >&2
  rm -rf "$BUILD/lib" # drop jars of an older dependency set
  if ! "${MVN:-mvn}" -B -f "$HERE/pom.xml" -Dstyle.color=never -Dmaven.repo.local="$M2" -Dosnode.build.dir="$BUILD" \
       package >"$BUILD/mvn.log" 2>&1 </dev/null; then
    echo "osnode: mvn package failed; last lines of $BUILD/mvn.log:" >&2
    tail -n 40 "$BUILD/mvn.log" >&2
    exit 1
  fi
  echo "$STAMP" >"$BUILD/.osnode-stamp"
  echo "osnode: built in $(elapsed)s" >&2
fi

# JVM flags: the subset of the distribution's config/jvm.options that matters in-process.
nohup "$JAVA" -Xms128m -Xmx"$HEAP" -XX:+UseG1GC -Xss1m \
  -XX:MaxDirectMemorySize=256m \
  -Djava.awt.headless=true -Dfile.encoding=UTF-8 \
  -Djava.locale.providers=SPI,COMPAT \
  -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true \
  -Dio.netty.recycler.maxCapacityPerThread=0 -Dio.netty.allocator.numDirectArenas=0 \
  -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true \
  -cp "$JAR:$BUILD/lib/*" osnode.OsNode "$PORT" "$DATA" >"$LOG" 2>&1 </dev/null 9>&- &
PID=$!
echo "$PID" >"$PIDFILE"
wait_ready "$PID" started
