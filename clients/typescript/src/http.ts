import { type Backoff, delayFor, sleep } from "./backoff.js";
import { retryAfterMs } from "./errors.js";

/** How the client talks HTTP: credentials, retries, the fetch it uses. */
export interface HttpOptions {
  /** The server, e.g. `https://api.example.com` (default: the page's own origin). */
  baseUrl?: string;
  /** An API key (`cvk_…`), sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Extra headers for every request (e.g. your own session cookie's CSRF token). */
  headers?: Record<string, string>;
  /** The fetch to use (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * Retries of one call: after a 429 or 503 (waiting for `Retry-After`), and after a
   * network error when the call is safe to repeat (GET, PUT, DELETE, or a POST with an
   * Idempotency-Key). Default 4.
   */
  retries?: number;
  /** A `Retry-After` longer than this is not waited for: the error is returned. Default 30 s. */
  maxRetryAfterMs?: number;
  /** The wait after a network error. */
  backoff?: Backoff;
}

/** POSTs the server deduplicates by `Idempotency-Key`: one key per logical call. */
const IDEMPOTENT_POSTS = [/^\/v1\/tasks$/, /^\/v1\/flash-sales\/[^/]+\/orders$/];

/** POSTs that are safe to repeat as they are (a second `complete` answers the first's upload). */
const REPEATABLE_POSTS = [/^\/v1\/uploads\/[^/]+\/complete$/];

/** A new Idempotency-Key: keep it with what it submits and send it again on a retry. */
export function idempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

export function baseUrlOf(options: HttpOptions): string {
  const base =
    options.baseUrl ??
    (typeof location !== "undefined" ? location.origin : undefined);
  if (!base) throw new TypeError("conveyor: baseUrl is required outside a browser page");
  return base.replace(/\/+$/, "");
}

/**
 * The fetch the typed client and the helpers use: adds the key, an Idempotency-Key to the
 * POSTs that take one (the same key on every retry of the call), and retries as
 * `HttpOptions.retries` says. A request may carry its own Idempotency-Key: then that one
 * is used, so a key kept across page reloads still deduplicates.
 */
export function conveyorFetch(options: HttpOptions): (input: Request) => Promise<Response> {
  const inner = options.fetch ?? globalThis.fetch.bind(globalThis);
  const retries = options.retries ?? 4;
  const maxRetryAfter = options.maxRetryAfterMs ?? 30_000;
  return async (input: Request) => {
    const request = new Request(input);
    if (options.apiKey && !request.headers.has("authorization")) {
      request.headers.set("authorization", `Bearer ${options.apiKey}`);
    }
    for (const [k, v] of Object.entries(options.headers ?? {})) {
      if (!request.headers.has(k)) request.headers.set(k, v);
    }
    const path = new URL(request.url).pathname;
    if (
      request.method === "POST" &&
      !request.headers.has("idempotency-key") &&
      IDEMPOTENT_POSTS.some((p) => p.test(path))
    ) {
      request.headers.set("idempotency-key", idempotencyKey());
    }
    const repeatable =
      (request.method !== "POST" && request.method !== "PATCH") ||
      request.headers.has("idempotency-key") ||
      REPEATABLE_POSTS.some((p) => p.test(path));
    for (let attempt = 0; ; attempt++) {
      // Each attempt sends a copy: a body can be read once.
      const copy = attempt < retries ? request.clone() : request;
      let res: Response;
      try {
        res = await inner(copy);
      } catch (e) {
        if (request.signal.aborted || !repeatable || attempt >= retries) throw e;
        await sleep(delayFor(attempt, options.backoff), request.signal);
        continue;
      }
      if ((res.status === 429 || res.status === 503) && attempt < retries) {
        const wait = retryAfterMs(res);
        if (wait !== undefined && wait <= maxRetryAfter) {
          await res.body?.cancel();
          await sleep(wait, request.signal);
          continue;
        }
      }
      return res;
    }
  };
}
