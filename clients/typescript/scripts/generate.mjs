// Regenerates src/generated/api.ts from a running server's /openapi.json
// (CONVEYOR_URL, e.g. under the repository's scripts/with-server.sh), or with --check fails when the
// checked-in file differs from what the server's document generates: the client can
// never drift from the API.
import { readFile, writeFile } from "node:fs/promises";
import openapiTS, { astToString } from "openapi-typescript";

const base = process.env.CONVEYOR_URL;
if (!base) {
  console.error("CONVEYOR_URL is not set (run under the repository's scripts/with-server.sh)");
  process.exit(2);
}
const target = new URL("../src/generated/api.ts", import.meta.url);
const res = await fetch(new URL("/openapi.json", base));
if (!res.ok) throw new Error(`GET /openapi.json: ${res.status}`);
const doc = await res.json();
const header =
  "// Generated from conveyor's /openapi.json by scripts/generate.mjs: do not edit.\n" +
  "// `npm run generate` (under the repository's scripts/with-server.sh) rewrites it; CI fails when it drifts.\n\n";
const body = header + astToString(await openapiTS(doc, { emptyObjectsUnknown: true }));
if (process.argv.includes("--check")) {
  const current = await readFile(target, "utf8").catch(() => "");
  if (current !== body) {
    const a = current.split("\n"), b = body.split("\n");
    const at = a.findIndex((line, i) => line !== b[i]);
    console.error(`src/generated/api.ts differs from the server's document at line ${at + 1}:`);
    console.error(`  checked in: ${a[at] ?? "(end)"}\n  generated:  ${b[at] ?? "(end)"}`);
    console.error("run: bash ../../scripts/with-server.sh -- npm run generate");
    process.exit(1);
  }
  console.log(`src/generated/api.ts matches the server's document (${body.split("\n").length} lines)`);
} else {
  await writeFile(target, body);
  console.log(`wrote src/generated/api.ts (${body.split("\n").length} lines)`);
}
