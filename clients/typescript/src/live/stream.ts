import type { EventUpdate } from "./frames.js";
import type { LiveEnv } from "./env.js";
import { followEvents } from "./follow.js";
import type { Feed, Subscription } from "./subscription.js";

/**
 * Server-Sent Events, one stream per subscription (`GET /v1/streams/{stream}/{id}/events`
 * with the API key): the fallback where WebSockets cannot pass. A stream that breaks
 * before its `end` event is reopened with `Last-Event-ID` after a backoff with jitter.
 */
export class StreamFeed implements Feed {
  private running = new Map<Subscription<unknown>, AbortController>();
  /** Each running stream's current request (a drop aborts it, not the subscription). */
  readonly requests = new Set<AbortController>();

  constructor(private env: LiveEnv) {}

  private closed = false;

  /** `moved`: the subscription was followed over a WebSocket that cannot be used here. */
  attach(sub: Subscription<unknown>, moved = false): void {
    if (this.closed) return sub.fail(new Error("conveyor: the client was closed"));
    sub.feed = this;
    const abort = new AbortController();
    this.running.set(sub, abort);
    void this.run(sub, abort.signal, moved).finally(() => this.running.delete(sub));
  }

  detach(sub: Subscription<unknown>): void {
    this.running.get(sub)?.abort();
    this.running.delete(sub);
  }

  /** Breaks every open stream as a network failure would (they resume). */
  drop(): void {
    for (const r of this.requests) r.abort();
  }

  close(): void {
    this.closed = true;
    for (const [sub, abort] of this.running) {
      abort.abort();
      sub.end("requested");
    }
    this.running.clear();
  }

  private async run(sub: Subscription<unknown>, signal: AbortSignal, moved: boolean): Promise<void> {
    const url = `${this.env.httpBase}/v1/streams/${encodeURIComponent(sub.stream)}/${encodeURIComponent(sub.id)}/events`;
    const how = await followEvents(
      this.env.fetch,
      url,
      {
        signal,
        resumed: moved,
        ...(this.env.backoff ? { backoff: this.env.backoff } : {}),
        headers: (): Record<string, string> =>
          sub.lastSeq === undefined ? {} : { "last-event-id": String(sub.lastSeq) },
        onOpen: (resumed) => {
          if (resumed) sub.notify("resumed", { afterSeq: sub.lastSeq, transport: "sse" });
        },
        onDrop: ({ attempt, delayMs }) => sub.notify("reconnecting", { attempt, delayMs, transport: "sse" }),
        onRefused: (error) => sub.fail(error),
        onMessage: (m) => {
          let data: Record<string, unknown>;
          try {
            data = JSON.parse(m.data) as Record<string, unknown>;
          } catch {
            return;
          }
          if (m.event === "snapshot") {
            sub.takeSnapshot({ type: "snapshot", stream: sub.stream, id: sub.id, seq: Number(m.id), view: data });
          } else if (m.event === "progress" || m.event === "line") {
            sub.takeEvent({ ...data, type: "event", stream: sub.stream, id: sub.id } as EventUpdate);
          }
        },
      },
      this.requests,
    );
    if (how === "end") sub.end("terminal");
  }
}
