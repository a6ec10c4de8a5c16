/**
 * `@conveyor/client`: a typed client for conveyor.
 *
 * - `client.api`: every REST operation, typed from the server's OpenAPI document
 *   (openapi-fetch over `src/generated/api.ts`); answers `{ data, error, response }`.
 * - `client.tasks`: submit (an Idempotency-Key per logical submit), get, cancel, retry,
 *   throwing `ConveyorError` with the API's code.
 * - `client.live`: `task(id)` / `stream(name, id)` subscriptions on one shared socket that
 *   resume after drops, with streamed text assembled.
 * - `client.uploads.upload(file, { purpose, onProgress, signal })`.
 */
import createClient, { type Client } from "openapi-fetch";

import { ConveyorError } from "./errors.js";
import type { components, paths } from "./generated/api.js";
import { type HttpOptions, baseUrlOf, conveyorFetch, idempotencyKey } from "./http.js";
import { Live, type LiveOptions } from "./live/index.js";
import { type UploadOptions, type UploadView, upload } from "./uploads.js";

export { ConveyorError, type ErrorDetail } from "./errors.js";
export { idempotencyKey, type HttpOptions } from "./http.js";
export { delayFor, type Backoff } from "./backoff.js";
export * from "./live/index.js";
export type { UploadOptions, UploadView } from "./uploads.js";
export type { components, paths, operations } from "./generated/api.js";

export type SubmitRequest = components["schemas"]["SubmitRequest"];
export type TaskView = components["schemas"]["TaskView"];

export interface ConveyorOptions extends HttpOptions {
  live?: LiveOptions;
}

export interface ConveyorClient {
  /** Every operation of the API, typed. */
  api: Client<paths>;
  tasks: {
    /**
     * Submits a task (202, `PENDING`). Pass the same `idempotencyKey` when you submit the
     * same thing again (after a reload, a lost answer): the server answers the first
     * task instead of making a second. Retries inside the client reuse it on their own.
     */
    submit(body: SubmitRequest, options?: { idempotencyKey?: string; signal?: AbortSignal }): Promise<TaskView>;
    get(id: string): Promise<TaskView>;
    cancel(id: string): Promise<TaskView>;
    retry(id: string): Promise<TaskView>;
  };
  live: Live;
  uploads: {
    upload(file: Blob, options: UploadOptions): Promise<UploadView>;
  };
  /** Ends live subscriptions and closes the socket. */
  close(): void;
}

/** Answers the data of a successful call, or throws its `ConveyorError`. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || result.data === undefined) {
    throw ConveyorError.fromBody(result.response, result.error);
  }
  return result.data;
}

export function createConveyor(options: ConveyorOptions = {}): ConveyorClient {
  const base = baseUrlOf(options);
  const fetch = conveyorFetch(options);
  const once = conveyorFetch({ ...options, retries: 0 });
  const api = createClient<paths>({ baseUrl: base, fetch });
  const liveOptions = options.live ?? {};
  const ticket =
    liveOptions.ticket ??
    (async () => unwrap(await api.POST("/v1/ws-tickets")).ticket);
  const live = new Live(
    {
      httpBase: base,
      wsBase: base.replace(/^http/, "ws"),
      fetch,
      ticket,
      WebSocket: liveOptions.WebSocket ?? globalThis.WebSocket,
      backoff: liveOptions.backoff,
      fallbackAfter: liveOptions.fallbackAfter ?? 2,
    },
    liveOptions.transport ?? "auto",
  );
  const auth: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
  return {
    api,
    tasks: {
      async submit(body, o = {}) {
        const key = o.idempotencyKey ?? idempotencyKey();
        return unwrap(
          await api.POST("/v1/tasks", {
            body,
            params: { header: { "Idempotency-Key": key } },
            ...(o.signal ? { signal: o.signal } : {}),
          }),
        );
      },
      async get(id) {
        return unwrap(await api.GET("/v1/tasks/{id}", { params: { path: { id } } }));
      },
      async cancel(id) {
        return unwrap(await api.POST("/v1/tasks/{id}/cancel", { params: { path: { id } } }));
      },
      async retry(id) {
        return unwrap(await api.POST("/v1/tasks/{id}/retry", { params: { path: { id } } }));
      },
    },
    live,
    uploads: {
      upload: (file, o) => upload({ base, api, once, auth: { ...options.headers, ...auth } }, file, o),
    },
    close: () => live.close(),
  };
}
