#!/usr/bin/env bash
# Stop the node that start.sh started (SIGTERM: the launcher closes the node cleanly; SIGKILL after 30 s).
#   stop.sh [HTTP_PORT|DATA_DIR]
# A number is a port: its DATA_DIR is then $OSNODE_DATA, else /var/tmp/conveyor-osnode/node-PORT (start.sh's default).
# No argument: $OSNODE_PORT, else 9200. Exit 0 also when nothing was running.
set -euo pipefail
ARG=${1:-${OSNODE_PORT:-9200}}
case $ARG in
  *[!0-9]*) DATA=$ARG ;;
  *) DATA=${OSNODE_DATA:-/var/tmp/conveyor-osnode/node-$ARG} ;;
esac
PIDFILE=$DATA/osnode.pid
if [ ! -f "$PIDFILE" ]; then echo "osnode: not running (no $PIDFILE)"; exit 0; fi
PID=$(cat "$PIDFILE" 2>/dev/null || true)
if [ -z "$PID" ] || ! kill -0 "$PID" 2>/dev/null \
   || ! tr '\0' ' ' <"/proc/$PID/cmdline" 2>/dev/null | grep -q 'osnode\.OsNode'; then
  rm -f "$PIDFILE"
  echo "osnode: not running (stale $PIDFILE removed)"
  exit 0
fi
kill "$PID" 2>/dev/null || true
for _ in $(seq 1 60); do kill -0 "$PID" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$PID" 2>/dev/null; then
  echo "osnode: pid $PID did not stop within 30s; killing it" >&2
  kill -9 "$PID" 2>/dev/null || true
fi
rm -f "$PIDFILE"
echo "stopped $PID"
