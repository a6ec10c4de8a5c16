import { type Backoff, delayFor, sleep } from "../backoff.js";
import { ConveyorError } from "../errors.js";
import { type SseMessage, readSse } from "./sse.js";

/** Calls the caller's handler; its failure is reported, not taken for a broken stream. */
function deliver(onMessage: (m: SseMessage) => void, m: SseMessage): void {
  try {
    onMessage(m);
  } catch (e) {
    queueMicrotask(() => {
      throw e;
    });
  }
}

/** What `followEvents` tells its caller. */
export interface FollowOptions {
  /** Each event of the stream, in order. */
  onMessage(m: SseMessage): void;
  /** The stream is open (`resumed`: after a drop, or `resumed` below on the first). */
  onOpen?(resumed: boolean): void;
  /** The stream broke; it is reopened after `delayMs`. */
  onDrop?(drop: { attempt: number; delayMs: number }): void;
  /** The server refused it (a 4xx other than 429): it is not reopened. */
  onRefused?(error: ConveyorError): void;
  /** Headers of each attempt (e.g. `Last-Event-ID` from what was seen). */
  headers?: () => Record<string, string>;
  /** Stops following. */
  signal?: AbortSignal;
  backoff?: Backoff;
  /** The first open continues what another transport followed (a fallback). */
  resumed?: boolean;
}

/**
 * Follows a Server-Sent Events endpoint until it sends `end`, refuses, or `signal` stops
 * it: reopened after every break with full-jitter backoff. fetch-based (it sends the key
 * as a header, which `EventSource` cannot). `requests` lets a caller break the current
 * attempt as a network failure would.
 */
export async function followEvents(
  fetch: (r: Request) => Promise<Response>,
  url: string,
  o: FollowOptions,
  requests?: Set<AbortController>,
): Promise<"end" | "refused" | "stopped"> {
  const signal = o.signal;
  let attempt = 0;
  let resumed = o.resumed ?? false;
  while (!signal?.aborted) {
    const request = new AbortController();
    const stop = () => request.abort();
    signal?.addEventListener("abort", stop, { once: true });
    requests?.add(request);
    try {
      const headers = { accept: "text/event-stream", ...o.headers?.() };
      const res = await fetch(new Request(url, { headers, signal: request.signal, cache: "no-store" }));
      if (!res.ok || !res.body) {
        const error = await ConveyorError.from(res);
        if (res.status >= 400 && res.status < 500 && res.status !== 429) {
          o.onRefused?.(error);
          return "refused";
        }
        throw error;
      }
      o.onOpen?.(resumed);
      let ended = false;
      await readSse(res.body, (m) => {
        attempt = 0;
        if (m.event === "end") ended = true;
        else deliver(o.onMessage, m);
      });
      if (ended) return "end";
    } catch {
      // A break, a refusal by a proxy, a 5xx: reopened below.
    } finally {
      // Whatever ended this attempt, its connection goes with it.
      request.abort();
      signal?.removeEventListener("abort", stop);
      requests?.delete(request);
    }
    if (signal?.aborted) break;
    resumed = true;
    const delayMs = delayFor(attempt++, o.backoff);
    o.onDrop?.({ attempt, delayMs });
    await sleep(delayMs, signal).catch(() => {});
  }
  return "stopped";
}
