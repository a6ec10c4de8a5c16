#!/usr/bin/env bash
# Stop the Jaeger that start.sh started (its traces were in memory: they go with it).
set -euo pipefail
HOME_DIR=${JAEGER_HOME:-/var/tmp/conveyor-jaeger}
PIDFILE=$HOME_DIR/jaeger.pid
if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
  kill "$(cat "$PIDFILE")"
  echo "jaeger: stopped"
fi
rm -f "$PIDFILE"
