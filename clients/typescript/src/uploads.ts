import type { Client } from "openapi-fetch";

import { ConveyorError } from "./errors.js";
import type { components, paths } from "./generated/api.js";

export type UploadView = components["schemas"]["UploadView"];

export interface UploadOptions {
  /** `video`, `image` or `audio`. */
  purpose: string;
  /** The file's name (kept with the upload; the type is read from the bytes). */
  filename?: string;
  /**
   * `auto` (default): straight to the bucket with a presigned URL where the store has
   * them, through the API otherwise; `direct` or `api` to choose.
   */
  via?: "auto" | "direct" | "api";
  /** Bytes sent so far, of `total`. */
  onProgress?: (sent: number, total: number) => void;
  signal?: AbortSignal;
}

/** What uploads need from the client. */
export interface UploadEnv {
  base: string;
  /** The typed client: presign, complete, delete. */
  api: Client<paths>;
  /** The client's fetch without retries, for the file's bytes: a retry would keep a copy of them. */
  once: (r: Request) => Promise<Response>;
  /** Headers of an authenticated request (the key), for the XHR path. */
  auth: Record<string, string>;
}

/**
 * Uploads a file and answers its `READY` view. Direct uploads reserve the size
 * (`POST /v1/uploads/presign`), PUT the bytes to the bucket, then `complete`; an aborted or
 * failed one is deleted.
 */
export async function upload(env: UploadEnv, file: Blob, o: UploadOptions): Promise<UploadView> {
  const via = o.via ?? "auto";
  if (via !== "api") {
    const presign = await env.api.POST("/v1/uploads/presign", {
      body: { purpose: o.purpose, content_type: file.type || "application/octet-stream", size: file.size },
    });
    if (presign.data) {
      // Not abortable until the answer is read: an upload reserved but never known to the
      // client could not be deleted. An abort meanwhile is honoured just after.
      const { upload, method, upload_url, headers } = presign.data;
      const path = { params: { path: { id: upload.id } } };
      try {
        o.signal?.throwIfAborted();
        // The headers are signed into the URL: the bucket refuses the PUT without them.
        await send(method, upload_url, file, file.size, headers, o);
        const done = await env.api.POST("/v1/uploads/{id}/complete", { ...path, ...(o.signal ? { signal: o.signal } : {}) });
        if (!done.data) throw ConveyorError.fromBody(done.response, done.error);
        return done.data;
      } catch (e) {
        // Delete the pending upload now rather than leave it for the server's collector
        // (its reservation returns after `storage.delete_grace_secs`, as for any delete).
        await env.api.DELETE("/v1/uploads/{id}", path).catch(() => {});
        throw e;
      }
    }
    const error = ConveyorError.fromBody(presign.response, presign.error);
    if (via === "direct" || error.code !== "presign_unavailable") throw error;
  }
  const form = new FormData();
  form.append("purpose", o.purpose);
  form.append("file", file, o.filename ?? "upload");
  const url = `${env.base}/v1/uploads?purpose=${encodeURIComponent(o.purpose)}`;
  const res = await send("POST", url, form, file.size, env.auth, o, env.once);
  return (await res.json()) as UploadView;
}

/**
 * Sends a body with progress in the file's bytes (`total`): XMLHttpRequest where there is
 * one (a browser: the only API with upload progress), fetch elsewhere (progress at the
 * start and the end).
 */
async function send(
  method: string,
  url: string,
  body: Blob | FormData,
  total: number,
  headers: Record<string, string>,
  o: UploadOptions,
  viaFetch?: (r: Request) => Promise<Response>,
): Promise<Response> {
  if (typeof XMLHttpRequest !== "undefined") {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open(method, url);
      for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
      // A form's bytes include its fields and boundaries: counted as the file's, capped.
      xhr.upload.onprogress = (e) => o.onProgress?.(Math.min(e.loaded, total), total);
      const abort = () => xhr.abort();
      const settled = () => o.signal?.removeEventListener("abort", abort);
      xhr.onloadend = settled;
      xhr.onload = () => {
        const res = new Response(xhr.responseText, {
          status: xhr.status,
          headers: { "content-type": xhr.getResponseHeader("content-type") ?? "application/json" },
        });
        if (res.ok) resolve(res);
        else void ConveyorError.from(res).then(reject);
      };
      xhr.onerror = () => reject(new TypeError(`upload to ${new URL(url).host} failed`));
      xhr.onabort = () => reject(o.signal?.reason ?? new DOMException("aborted", "AbortError"));
      if (o.signal?.aborted) return reject(o.signal.reason);
      o.signal?.addEventListener("abort", abort, { once: true });
      xhr.send(body);
    });
  }
  o.onProgress?.(0, total);
  const request = new Request(url, { method, body, headers, ...(o.signal ? { signal: o.signal } : {}) });
  const res = await (viaFetch ?? fetch)(request);
  if (!res.ok) throw await ConveyorError.from(res);
  o.onProgress?.(total, total);
  return res;
}
