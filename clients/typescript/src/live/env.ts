import type { Backoff } from "../backoff.js";

/** What the live transports need from the client. */
export interface LiveEnv {
  /** `ws(s)://host` of the server. */
  wsBase: string;
  /** `http(s)://host` of the server. */
  httpBase: string;
  /** The client's fetch (key, retries on 429/503). */
  fetch: (r: Request) => Promise<Response>;
  /** A single-use WebSocket ticket. */
  ticket: () => Promise<string>;
  WebSocket: typeof WebSocket;
  backoff: Backoff | undefined;
  /** WebSocket opens refused in a row, before any succeeded, that switch to SSE. */
  fallbackAfter: number;
}
