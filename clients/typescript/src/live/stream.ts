import { delayFor, sleep } from "../backoff.js";
import { ConveyorError } from "../errors.js";
import type { EventUpdate } from "./frames.js";
import type { LiveEnv } from "./env.js";
import { readSse } from "./sse.js";
import type { Feed, Subscription } from "./subscription.js";

/**
 * Server-Sent Events, one stream per subscription (`GET /v1/streams/{stream}/{id}/events`
 * with the API key): the fallback where WebSockets cannot pass. A stream that breaks
 * before its `end` event is reopened with `Last-Event-ID` after a backoff with jitter.
 */
export class StreamFeed implements Feed {
  private running = new Map<Subscription<unknown>, AbortController>();

  constructor(private env: LiveEnv) {}

  attach(sub: Subscription<unknown>): void {
    sub.feed = this;
    const abort = new AbortController();
    this.running.set(sub, abort);
    void this.run(sub, abort.signal).finally(() => this.running.delete(sub));
  }

  detach(sub: Subscription<unknown>): void {
    this.running.get(sub)?.abort();
    this.running.delete(sub);
  }

  close(): void {
    for (const [sub, abort] of this.running) {
      abort.abort();
      sub.end("requested");
    }
    this.running.clear();
  }

  private async run(sub: Subscription<unknown>, signal: AbortSignal): Promise<void> {
    const url = `${this.env.httpBase}/v1/streams/${encodeURIComponent(sub.stream)}/${encodeURIComponent(sub.id)}/events`;
    let attempt = 0;
    let resumed = false;
    while (sub.open && !signal.aborted) {
      try {
        const headers: Record<string, string> = { accept: "text/event-stream" };
        if (sub.lastSeq !== undefined) headers["last-event-id"] = String(sub.lastSeq);
        const res = await this.env.fetch(new Request(url, { headers, signal, cache: "no-store" }));
        if (!res.ok || !res.body) {
          const error = await ConveyorError.from(res);
          if (res.status < 500 && res.status !== 429) return sub.fail(error);
          throw error;
        }
        if (resumed) sub.notify("resumed", { afterSeq: sub.lastSeq, transport: "sse" });
        let ended = false;
        await readSse(res.body, (m) => {
          attempt = 0;
          const data = JSON.parse(m.data) as Record<string, unknown>;
          if (m.event === "snapshot") {
            sub.takeSnapshot({ type: "snapshot", stream: sub.stream, id: sub.id, seq: Number(m.id), view: data });
          } else if (m.event === "progress" || m.event === "line") {
            sub.takeEvent({ ...data, type: "event", stream: sub.stream, id: sub.id } as EventUpdate);
          } else if (m.event === "end") {
            ended = true;
          }
        });
        if (ended) return sub.end("terminal");
      } catch {
        if (signal.aborted) return;
      }
      resumed = true;
      const delayMs = delayFor(attempt++, this.env.backoff);
      sub.notify("reconnecting", { attempt, delayMs, transport: "sse" });
      await sleep(delayMs, signal).catch(() => {});
    }
  }
}
