import type { Backoff } from "../backoff.js";
import type { components } from "../generated/api.js";
import type { LiveEnv } from "./env.js";
import { type FollowOptions, followEvents } from "./follow.js";
import { SocketFeed } from "./socket.js";
import { StreamFeed } from "./stream.js";
import { Subscription } from "./subscription.js";

export type { LiveUpdate, EventUpdate, SnapshotUpdate } from "./frames.js";
export { Subscription, type SubscriptionEvents } from "./subscription.js";
export type { FollowOptions } from "./follow.js";
export type { SseMessage } from "./sse.js";

export interface LiveOptions {
  /**
   * `auto` (default): one WebSocket for the page, falling back to SSE when WebSockets
   * cannot be opened here (no WebSocket in this runtime, or a proxy refusing the
   * upgrade); `websocket` or `sse` to choose. SSE needs the API key (`apiKey`).
   */
  transport?: "auto" | "websocket" | "sse";
  /** A WebSocket implementation (Node 20 has none built in: pass `ws`'s). */
  WebSocket?: typeof WebSocket;
  /** Waits between reconnects: full jitter up to a growing ceiling, capped. */
  backoff?: Backoff;
  /** Refused WebSocket opens in a row, before any succeeded, that switch `auto` to SSE. Default 2. */
  fallbackAfter?: number;
  /**
   * Where WebSocket tickets come from. Default: `POST /v1/ws-tickets` with the client's
   * key. A frontend without a key asks its own backend, which asks conveyor.
   */
  ticket?: () => Promise<string>;
}

export type TaskView = components["schemas"]["TaskView"];

/** Live progress: every subscription of a client shares one socket. */
export class Live {
  private socket: SocketFeed | undefined;
  private sse: StreamFeed;

  constructor(
    private env: Omit<LiveEnv, "WebSocket"> & { WebSocket: typeof WebSocket | undefined },
    private transport: "auto" | "websocket" | "sse",
  ) {
    this.sse = new StreamFeed(env as LiveEnv);
    if (transport !== "sse" && env.WebSocket) {
      this.socket = new SocketFeed(env as LiveEnv, (subs) => {
        if (this.transport !== "auto") return false;
        // WebSockets do not get through here: every subscription, now and later, on SSE.
        this.socket = undefined;
        for (const sub of subs) this.sse.attach(sub, true);
        return true;
      });
    } else if (transport === "websocket") {
      throw new TypeError("conveyor: no WebSocket in this runtime (pass options.live.WebSocket)");
    }
  }

  /** A task's snapshot, then its events until it is final (`GET /v1/tasks/{id}`'s view). */
  task(id: string, options: { afterSeq?: number } = {}): Subscription<TaskView> {
    return this.stream<TaskView>("task", id, options);
  }

  /** Any stream kind a domain serves (`task`, `order`, …). `afterSeq` resumes after a known event. */
  stream<View = Record<string, unknown>>(name: string, id: string, options: { afterSeq?: number } = {}): Subscription<View> {
    const sub = new Subscription<View>(name, id, options.afterSeq);
    (this.socket ?? this.sse).attach(sub as Subscription<unknown>);
    return sub;
  }

  /**
   * Follows any Server-Sent Events endpoint of the API (e.g. `/v1/admin/ops/stream`) with
   * the client's key, reopening it after every break, until it sends `end`, refuses, or
   * `options.signal` stops it.
   */
  events(path: string, options: FollowOptions): Promise<"end" | "refused" | "stopped"> {
    return followEvents(this.env.fetch, this.env.httpBase + path, {
      ...(this.env.backoff ? { backoff: this.env.backoff } : {}),
      ...options,
    });
  }

  /** Drops the shared socket as a network failure would (to test or measure a resume). */
  dropConnection(): void {
    this.socket?.drop();
    this.sse.drop();
  }

  /** Ends every subscription and closes the socket. */
  close(): void {
    this.socket?.close();
    this.sse.close();
  }
}
