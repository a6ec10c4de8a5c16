#!/usr/bin/env bash
# Start one real Jaeger (v2, all in one process, traces in memory) in the background on
# 127.0.0.1: OTLP/HTTP on :4318, the query API on :16686. Idempotent: if the query API
# answers it does nothing.
#
#   start.sh
#
# Env:  JAEGER_VERSION  the Go module version built (default v1.75.0, known to build with
#                       this Go)
#       JAEGER_HOME     binary and log (default /var/tmp/conveyor-jaeger; the binary is
#                       cached in $JAEGER_HOME/bin/jaeger-$JAEGER_VERSION, ~120 MB, a few
#                       minutes to build on 2 cores the first time)
# Prints "READY otlp=http://127.0.0.1:4318 query=http://127.0.0.1:16686" (exit 0), or why
# and the log tail (exit 1). Stop: stop.sh.
#
# Built with `go build` inside the downloaded module: `go install jaeger@version` refuses
# a module whose go.mod has replace directives, as Jaeger's does.
set -euo pipefail

VERSION=${JAEGER_VERSION:-v1.75.0}
HOME_DIR=${JAEGER_HOME:-/var/tmp/conveyor-jaeger}
BIN=$HOME_DIR/bin/jaeger-$VERSION
LOG=$HOME_DIR/jaeger.log
PIDFILE=$HOME_DIR/jaeger.pid
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
QUERY=http://127.0.0.1:${JAEGER_QUERY_PORT:-16686}
OTLP=http://127.0.0.1:${JAEGER_OTLP_PORT:-4318}

mkdir -p "$HOME_DIR/bin"
answers() { curl -sf -o /dev/null --max-time 2 "$QUERY/api/services" 2>/dev/null; }

if answers; then
  echo "READY otlp=$OTLP query=$QUERY (already running)"
  exit 0
fi

if [ ! -x "$BIN" ]; then
  echo "jaeger: building Jaeger $VERSION (once; cached in $BIN)"
  go mod download -json "github.com/jaegertracing/jaeger@$VERSION" > "$HOME_DIR/module.json"
  DIR=$(sed -n 's/.*"Dir": "\(.*\)",*/\1/p' "$HOME_DIR/module.json")
  [ -d "$DIR" ] || { echo "jaeger: the module did not download" >&2; exit 1; }
  (cd "$DIR" && go build -o "$BIN.tmp" ./cmd/jaeger)
  mv "$BIN.tmp" "$BIN"
fi

nohup "$BIN" --config "file:$HERE/config.yaml" > "$LOG" 2>&1 &
echo $! > "$PIDFILE"
for _ in $(seq 1 60); do
  if answers; then
    echo "READY otlp=$OTLP query=$QUERY"
    exit 0
  fi
  if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "jaeger: the process exited" >&2
    tail -20 "$LOG" >&2
    exit 1
  fi
  sleep 1
done
echo "jaeger: the query API did not answer in 60 s" >&2
tail -20 "$LOG" >&2
exit 1
