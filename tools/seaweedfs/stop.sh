#!/usr/bin/env bash
# Stop the SeaweedFS server start.sh started.
set -euo pipefail
PIDFILE=${WEED_HOME:-/var/tmp/conveyor-weed}/weed.pid
[ -f "$PIDFILE" ] || exit 0
kill "$(cat "$PIDFILE")" 2>/dev/null || true
rm -f "$PIDFILE"
