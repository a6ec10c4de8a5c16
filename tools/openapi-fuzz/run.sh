#!/usr/bin/env bash
# Property-based run of the published OpenAPI document against a running conveyor, with
# a user key and an admin key (schemathesis, every check): no server error, no schema
# violation, no undocumented status, no unresolvable reference.
#
#   bash tools/openapi-fuzz/run.sh [path/to/conveyor]   # default: a debug build
#
# It starts `conveyor serve` on the embedded defaults with scripts/with-server.sh (per-tenant
# rates and the failed-authentication budget raised so the run tests the schema, not the
# limits), which creates the two users; it runs schemathesis once per key. Schemathesis is installed into
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
# Every per-tenant rate and the failed-authentication budget out of the way.
export CONVEYOR__LOG__LEVEL=error \
  CONVEYOR__LIMITS__SUBMITS_PER_SEC=100000 CONVEYOR__LIMITS__SUBMIT_BURST=100000 \
  CONVEYOR__LIMITS__TICKETS_PER_MIN=1000000 CONVEYOR__LIMITS__ORDERS_PER_SEC=100000 \
  CONVEYOR__LIMITS__PAYMENTS_PER_MIN=1000000 CONVEYOR__LIMITS__OPEN_PAYMENTS=1000000 \
  CONVEYOR__LIMITS__MATERIAL_WRITES_PER_MIN=1000000 CONVEYOR__AUTH__FAILED_PER_MINUTE=0
export ST="$venv/bin/st" CONFIG="$here/schemathesis.toml" EXAMPLES="${FUZZ_EXAMPLES:-25}"
exec bash "$repo/scripts/with-server.sh" --bin "$bin" -- bash -c '
  status=0
  for key in "$CONVEYOR_KEY" "$CONVEYOR_ADMIN_KEY"; do
    "$ST" --config-file "$CONFIG" run "$CONVEYOR_URL/openapi.json" \
      -H "Authorization: Bearer $key" --max-examples "$EXAMPLES" --workers 2 --seed 1 || status=1
  done
  exit $status'
