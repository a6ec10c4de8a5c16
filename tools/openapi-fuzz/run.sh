#!/usr/bin/env bash
# Property-based run of the published OpenAPI document against a running conveyor, with
# a user key and an admin key (schemathesis, every check): no server error, no schema
# violation, no undocumented status, no unresolvable reference.
#
#   bash tools/openapi-fuzz/run.sh [path/to/conveyor]   # default: a debug build
#
# It starts `conveyor serve` on the embedded defaults in a temporary directory (per-tenant
# rates and the failed-authentication budget raised so the run tests the schema, not the
# limits), creates the two users, runs
# schemathesis once per key, and stops the server. Schemathesis is installed into
# /var/tmp/conveyor-schemathesis on first use (PyPI).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$repo/target}/debug/conveyor}"
[[ -x "$bin" ]] || { echo "no conveyor binary at $bin (cargo build first, or pass its path)"; exit 2; }
venv=/var/tmp/conveyor-schemathesis
if [[ ! -x "$venv/bin/st" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" -q install 'schemathesis>=4.3,<5'
fi
work="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
export CONVEYOR_CONFIG_DIR="$repo/config" CONVEYOR__SERVER__PORT="$port" CONVEYOR__LOG__LEVEL=error \
  CONVEYOR__LIMITS__SUBMITS_PER_SEC=100000 CONVEYOR__LIMITS__SUBMIT_BURST=100000 \
  CONVEYOR__LIMITS__TICKETS_PER_MIN=1000000 CONVEYOR__LIMITS__ORDERS_PER_SEC=100000 \
  CONVEYOR__LIMITS__PAYMENTS_PER_MIN=1000000 CONVEYOR__LIMITS__OPEN_PAYMENTS=1000000 \
  CONVEYOR__LIMITS__MATERIAL_WRITES_PER_MIN=1000000 CONVEYOR__AUTH__FAILED_PER_MINUTE=0
cd "$work"
user="$("$bin" users create --name fuzz --credits 1000000 | awk '/API key/ {print $NF}')"
admin="$("$bin" users create --name fuzz-admin --admin | awk '/API key/ {print $NF}')"
"$bin" serve > serve.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -fs "localhost:$port/readyz" >/dev/null && break; sleep 0.2; done
status=0
for key in "$user" "$admin"; do
  "$venv/bin/st" --config-file "$here/schemathesis.toml" run "http://127.0.0.1:$port/openapi.json" \
    -H "Authorization: Bearer $key" --max-examples "${FUZZ_EXAMPLES:-25}" \
    --workers 2 --seed 1 || status=1
done
exit $status
