#!/usr/bin/env bash
# Runs a command against a fresh `conveyor serve` on the embedded defaults (no broker,
# database or Redis server), in a temporary directory, with these set for it:
#   CONVEYOR_URL        the server's base URL
#   CONVEYOR_KEY        a user's API key (credits to spend)
#   CONVEYOR_ADMIN_KEY  an admin's API key
#
#   bash scripts/with-server.sh [--bin path/to/conveyor] [--s3 http://127.0.0.1:8333] -- command…
#
# The binary defaults to the debug build ($CARGO_TARGET_DIR or the repository's target/).
# Limits are raised out of the way of tests and fuzzing; CONVEYOR__… variables already
# set (other limits, another log level) are kept. Used by the TypeScript client's checks
# (clients/typescript/scripts/ci.sh) and the OpenAPI fuzz run (tools/openapi-fuzz).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
bin="${CARGO_TARGET_DIR:-$repo/target}/debug/conveyor"
s3=""
while [[ $# -gt 0 && "$1" != "--" ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    # Files in an S3-compatible store (tools/seaweedfs: its test bucket and keys), under a
    # prefix of this run's, instead of the local folder: presigned uploads work there.
    --s3) s3="$2"; shift 2 ;;
    *) echo "usage: $0 [--bin conveyor] [--s3 http://host:port] -- command…"; exit 2 ;;
  esac
done
[[ "${1:-}" == "--" ]] && shift
[[ -x "$bin" ]] || { echo "no conveyor binary at $bin (cargo build --bin conveyor first, or pass --bin)"; exit 2; }
work="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
export CONVEYOR_CONFIG_DIR="$repo/config" CONVEYOR__SERVER__PORT="$port"
# Limits out of the way; `params.simulate` allowed (tests set step times). Unless set.
for kv in LOG__LEVEL=warn LIMITS__TICKETS_PER_MIN=100000 LIMITS__SUBMITS_PER_SEC=100000 \
    LIMITS__SUBMIT_BURST=100000 AI__ALLOW_FAILURE_INJECTION=true; do
  name="CONVEYOR__${kv%%=*}"
  [[ -n "${!name:-}" ]] || export "$name=${kv#*=}"
done
if [[ -n "$s3" ]]; then
  export CONVEYOR__STORAGE__BACKEND=s3 CONVEYOR__STORAGE__ENDPOINT="$s3" \
    CONVEYOR__STORAGE__BUCKET=conveyor-test CONVEYOR__STORAGE__ACCESS_KEY_ID=conveyor-test \
    CONVEYOR__STORAGE__SECRET_ACCESS_KEY=conveyor-test-secret-key-0123456789 \
    CONVEYOR__STORAGE__PATH_STYLE=true CONVEYOR__STORAGE__ALLOW_HTTP=true \
    CONVEYOR__STORAGE__PREFIX="ts-client-$$-$RANDOM"
fi
(
  cd "$work"
  "$bin" users create --name client --credits 1000000 | awk '/API key/ {print $NF}' > user.key
  "$bin" users create --name client-admin --admin | awk '/API key/ {print $NF}' > admin.key
)
(cd "$work" && exec "$bin" serve > serve.log 2>&1) &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 150); do curl -fs "127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
curl -fs "127.0.0.1:$port/readyz" >/dev/null || { cat "$work/serve.log"; exit 1; }
export CONVEYOR_URL="http://127.0.0.1:$port" CONVEYOR_KEY="$(cat "$work/user.key")" \
  CONVEYOR_ADMIN_KEY="$(cat "$work/admin.key")"
set +e
"$@"
status=$?
if [[ $status -ne 0 ]]; then echo "--- conveyor serve's log"; tail -50 "$work/serve.log"; fi
exit $status
