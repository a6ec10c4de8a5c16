#!/usr/bin/env bash
# The README's test command as a new user runs it on a fresh machine with nothing but
# Rust: no RabbitMQ, Redis, MariaDB, PostgreSQL, OpenSearch, S3 server or Jaeger to
# reach, no Standard Webhooks virtualenv, no FFmpeg, promtool, Chromium or Node. Every
# test must pass there, on the embedded backends; a real-service test says SKIPPED.
#
# Services: the tests run in a network namespace of their own (`unshare --net`, loopback
# only), so nothing on this machine answers whatever is running outside it. Tools: PATH
# is a directory of links to every program on the caller's PATH except the optional
# ones. The build happens outside first (crates come from the registry), the tests
# inside with --offline. Run it on a clean checkout (.ci/run does, before anything else
# writes into the tree): it says so when the tree has files git does not track.
#
#   bash scripts/bare-test.sh            # root (unshare needs it); CARGO_TARGET_DIR as set
set -euo pipefail
cd "$(dirname "$0")/.."

# Programs a fresh machine does not have (the tests skip what needs them, saying so).
hidden=(ffmpeg ffprobe promtool chromium chromedriver node npm npx rabbitmqctl
        rabbitmq-server redis-server redis-cli mariadb mysql psql pg_ctlcluster)

if ! command -v ip >/dev/null; then
  apt-get update -qq && apt-get install -y -qq iproute2 >/dev/null
fi

untracked=$(git status --porcelain --ignored --untracked-files=all | grep -v '^!! target/' | head -n 20 || true)
if [[ -n $untracked ]]; then
  echo "bare-test: the tree is not a clean clone; files git does not track or has changed:"
  echo "$untracked"
fi

shadow=$(mktemp -d)
trap 'rm -rf "$shadow"' EXIT
IFS=: read -r -a dirs <<< "$PATH"
for dir in "${dirs[@]}"; do
  [[ -d $dir ]] || continue
  for program in "$dir"/*; do
    name=${program##*/}
    [[ -x $program && ! -d $program && ! -e $shadow/$name ]] || continue
    for h in "${hidden[@]}"; do
      [[ $name == "$h" ]] && continue 2
    done
    ln -s "$program" "$shadow/$name"
  done
done

# Built where the registry is reachable; the same flags inside reuse this build.
env -u CONVEYOR_REQUIRE_SERVICES cargo test --workspace --locked --no-run

log=$(mktemp)
set +e
env -u CONVEYOR_REQUIRE_SERVICES \
  CONVEYOR_SWH_VENV=/nonexistent/conveyor-swh \
  PATH="$shadow" \
  unshare --net -- bash -c 'ip link set lo up && exec cargo test --workspace --locked --offline' \
  2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
skipped=$(grep -c '^SKIPPED' "$log" || true)
awk -v skipped="$skipped" '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "bare-test: %d passed, %d failed on a machine without services or tools (%d skip lines)\n", p, f, skipped }' "$log"
rm -f "$log"
exit "$status"
