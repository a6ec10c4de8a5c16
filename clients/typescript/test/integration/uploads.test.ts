// Uploads against a running `conveyor serve` (the repository's scripts/with-server.sh): through the API on
// the local store, straight to the bucket with a presigned URL on an S3 store
// (CONVEYOR_STORE=s3, `with-server.sh --s3`).
import { describe, expect, it } from "vitest";

import { createConveyor } from "../../src/index.js";

const baseUrl = process.env.CONVEYOR_URL ?? "";
const apiKey = process.env.CONVEYOR_KEY ?? "";
if (!baseUrl || !apiKey) throw new Error("CONVEYOR_URL and CONVEYOR_KEY are not set: run under the repository's scripts/with-server.sh");
const s3 = process.env.CONVEYOR_STORE === "s3";

// A tiny PNG: the server reads the type from the bytes.
const png = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="),
  (ch) => ch.charCodeAt(0),
);

describe(`uploads on the ${s3 ? "S3" : "local"} store`, () => {
  const c = createConveyor({ baseUrl, apiKey });

  it(s3 ? "go straight to the bucket with a presigned URL, with progress" : "go through the API, with progress", async () => {
    const progress: number[] = [];
    const seen: string[] = [];
    const watched = createConveyor({
      baseUrl,
      apiKey,
      fetch: (r) => {
        seen.push(`${r.method} ${new URL(r.url).pathname}`);
        return fetch(r);
      },
    });
    const up = await watched.uploads.upload(new Blob([png], { type: "image/png" }), {
      purpose: "image",
      filename: "dot.png",
      onProgress: (sent) => progress.push(sent),
    });
    expect(up).toMatchObject({ status: "READY", content_type: "image/png", size: png.length });
    expect(progress.at(-1)).toBe(png.length);
    if (s3) {
      expect(seen).toEqual(["POST /v1/uploads/presign", `POST /v1/uploads/${up.id}/complete`]);
    } else {
      expect(seen).toEqual(["POST /v1/uploads/presign", "POST /v1/uploads"]);
    }
    // The file downloads from its signed URL.
    const file = await fetch(new URL(up.url ?? "", baseUrl));
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(png);
  });

  it("an upload aborted once the size is reserved fails and is not left pending", async () => {
    const aborted = new AbortController();
    // Abort as soon as the presign has answered: the bytes are never sent.
    const aborting = createConveyor({
      baseUrl,
      apiKey,
      fetch: async (r) => {
        const res = await fetch(r);
        if (new URL(r.url).pathname.endsWith("/presign")) aborted.abort();
        return res;
      },
    });
    await expect(
      aborting.uploads.upload(new Blob([png], { type: "image/png" }), { purpose: "image", signal: aborted.signal }),
    ).rejects.toThrow();
    // The pending upload was deleted, not left for the server's collector.
    const uploads = (await c.api.GET("/v1/uploads", { params: { query: { limit: 100 } } })).data?.items ?? [];
    expect(uploads.length).toBeGreaterThan(0);
    expect(uploads.filter((u) => u.status === "PENDING").map((u) => [u.id, u.created_at, u.size])).toEqual([]);
  });

  it("a type the purpose does not take is refused with the API's code", async () => {
    const e = await c.uploads
      .upload(new Blob([new TextEncoder().encode("#!/bin/sh\necho hi\n")], { type: "image/png" }), { purpose: "image" })
      .catch((e: unknown) => e);
    expect(e).toMatchObject({ code: "unsupported_media_type" });
  });
});
