#!/usr/bin/env bash
# The TypeScript client's checks, as CI runs them (after `cargo test` built the server):
# dependencies from the lockfile, strict type-check, build, unit tests, the pages' bundle
# current, then against a fresh `conveyor serve`: the generated types match its
# /openapi.json and the integration tests pass (uploads also on an S3 store when
# CONVEYOR_TEST_S3_URL names one).
#
#   bash clients/typescript/scripts/ci.sh [path/to/conveyor]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=()
[[ -n "${1:-}" ]] && bin=(--bin "$1")
npm ci --no-audit --no-fund --loglevel=error
npx tsc --noEmit
npm run -s build
npm run -s test
npm run -s check:bundle
bash ../../scripts/with-server.sh "${bin[@]}" -- npm run -s check:generated
bash ../../scripts/with-server.sh "${bin[@]}" -- npm run -s test:integration
# Presigned uploads need an S3-compatible store (tools/seaweedfs/start.sh).
if [[ -n "${CONVEYOR_TEST_S3_URL:-}" ]]; then
  CONVEYOR_STORE=s3 bash ../../scripts/with-server.sh "${bin[@]}" --s3 "$CONVEYOR_TEST_S3_URL" -- \
    npx vitest run test/integration/uploads.test.ts
fi
size=$(node -e 'const fs=require("fs"),z=require("zlib");const b=fs.readFileSync("../../src/api/assets/conveyor-client.js");console.log(b.length+" bytes minified, "+z.gzipSync(b,{level:9}).length+" gzipped")')
echo "ci: @conveyor/client checks passed (bundle: $size)"
