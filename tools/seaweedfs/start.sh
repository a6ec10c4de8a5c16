#!/usr/bin/env bash
# Start one real SeaweedFS server (master, volume, filer and S3 gateway in one process) in
# the background on 127.0.0.1, with the test identity, and create the test bucket.
# Idempotent: if it is already answering it only checks the bucket.
#
#   start.sh
#
# Env:  WEED_VERSION  the Go module version built (default below: the newest the module
#                     proxy served when this was written)
#       WEED_HOME     binary and data (default /var/tmp/conveyor-weed; the binary is cached
#                     in $WEED_HOME/bin/weed-$WEED_VERSION, ~230 MB, ~5 min to build on 2 cores)
#       S3_PORT       default 8333
# Prints "READY http://127.0.0.1:8333 bucket=conveyor-test" (exit 0), or why and the log
# tail (exit 1). Stop: stop.sh.
#
# Built with `go build` inside the downloaded module: `go install weed@version` refuses a
# module whose go.mod has replace directives, as SeaweedFS's does.
set -euo pipefail

VERSION=${WEED_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}
HOME_DIR=${WEED_HOME:-/var/tmp/conveyor-weed}
S3_PORT=${S3_PORT:-8333}
BIN=$HOME_DIR/bin/weed-$VERSION
DATA=$HOME_DIR/data
LOG=$HOME_DIR/weed.log
PIDFILE=$HOME_DIR/weed.pid
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
URL=http://127.0.0.1:$S3_PORT
# The test identity (tests/api/helpers/services.rs uses the same pair).
ACCESS=${S3_ACCESS_KEY:-conveyor-test}
SECRET=${S3_SECRET_KEY:-conveyor-test-secret-key-0123456789}
BUCKET=${S3_BUCKET:-conveyor-test}

mkdir -p "$HOME_DIR/bin" "$DATA"
answers() { curl -s -o /dev/null --max-time 2 "$URL/" 2>/dev/null; }
bucket() { # create the bucket (an existing one is fine)
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X PUT \
    --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS:$SECRET" "$URL/$BUCKET")
  case $code in 200|409) return 0 ;; *) echo "weed: creating bucket $BUCKET answered $code" >&2; return 1 ;; esac
}

if answers; then
  bucket
  echo "READY $URL bucket=$BUCKET (already running)"
  exit 0
fi

if [ ! -x "$BIN" ]; then
  echo "weed: building SeaweedFS $VERSION (once; cached in $BIN)"
  go mod download -json "github.com/seaweedfs/seaweedfs@$VERSION" > "$HOME_DIR/module.json"
  DIR=$(sed -n 's/.*"Dir": "\(.*\)",*/\1/p' "$HOME_DIR/module.json")
  [ -d "$DIR" ] || { echo "weed: the module did not download" >&2; exit 1; }
  (cd "$DIR" && go build -o "$BIN.tmp" ./weed)
  mv "$BIN.tmp" "$BIN"
fi

cat > "$HOME_DIR/s3.json" <<JSON
{"identities": [{"name": "conveyor", "credentials": [{"accessKey": "$ACCESS", "secretKey": "$SECRET"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
JSON

# Small volumes: the default (30 GB each, 7 preallocated) does not fit a CI disk.
nohup "$BIN" server -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$DATA" \
  -master.port=9333 -master.volumeSizeLimitMB=256 -volume.port=8088 -volume.max=40 \
  -filer -filer.port=8888 -s3 -s3.port="$S3_PORT" -s3.config="$HOME_DIR/s3.json" \
  > "$LOG" 2>&1 &
echo $! > "$PIDFILE"
for _ in $(seq 1 120); do
  if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "weed: the server exited; last lines of $LOG:" >&2; tail -n 30 "$LOG" >&2; exit 1
  fi
  if answers && bucket 2>/dev/null; then
    echo "READY $URL bucket=$BUCKET pid=$(cat "$PIDFILE")"
    exit 0
  fi
  sleep 1
done
echo "weed: not ready in 120 s; last lines of $LOG:" >&2; tail -n 30 "$LOG" >&2
exit 1
