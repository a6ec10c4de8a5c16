import { delayFor } from "../backoff.js";
import { ConveyorError } from "../errors.js";
import { type EventUpdate, type ServerFrame, snapshotOf } from "./frames.js";
import type { LiveEnv } from "./env.js";
import type { Feed, Subscription } from "./subscription.js";

/** How long an unused socket stays open for the page's next subscription. */
const LINGER_MS = 10_000;

/** The error codes of an `error` frame, as HTTP statuses. */
const STATUS: Record<string, number> = { not_found: 404, too_many_subscriptions: 429, unknown_stream: 404 };

/**
 * One WebSocket for every subscription of a page: a ticket, the socket, a `subscribe`
 * per thing; after a drop, a new ticket and socket after a backoff with jitter, and each
 * thing resubscribed from its last `seq` (nothing missed, nothing twice).
 */
export class SocketFeed implements Feed {
  private subs = new Map<string, Subscription<unknown>>();
  private ws: WebSocket | undefined;
  private connecting = false;
  private attempt = 0;
  /** Opens that failed in a row before a socket ever opened (a proxy that blocks them). */
  private refused = 0;
  private everOpened = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(
    private env: LiveEnv,
    /** Called with the subscriptions when WebSockets cannot be opened here at all. */
    private unusable: (subs: Subscription<unknown>[]) => boolean,
  ) {}

  attach(sub: Subscription<unknown>): void {
    sub.feed = this;
    this.subs.set(sub.key, sub);
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.ws?.readyState === 1) this.subscribe(sub);
    else void this.connect();
  }

  detach(sub: Subscription<unknown>): void {
    if (this.subs.get(sub.key) !== sub) return;
    this.subs.delete(sub.key);
    if (this.ws?.readyState === 1) {
      this.ws.send(JSON.stringify({ op: "unsubscribe", stream: sub.stream, id: sub.id }));
    }
    this.idle();
  }

  /** Closes the socket; its subscriptions end (`requested`). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const sub of [...this.subs.values()]) sub.end("requested");
    this.subs.clear();
    this.ws?.close(1000);
    this.ws = undefined;
  }

  /** For tests and measurements: drops the socket as a network failure would. */
  drop(): void {
    this.ws?.close(4000, "dropped by the client");
  }

  private subscribe(sub: Subscription<unknown>): void {
    const frame: Record<string, unknown> = { op: "subscribe", stream: sub.stream, id: sub.id };
    if (sub.lastSeq !== undefined) frame.after_seq = sub.lastSeq;
    this.ws?.send(JSON.stringify(frame));
  }

  private idle(): void {
    if (this.subs.size > 0 || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.subs.size === 0) {
        this.ws?.close(1000);
        this.ws = undefined;
      }
    }, LINGER_MS);
  }

  private async connect(): Promise<void> {
    if (this.connecting || this.ws || this.closed) return;
    this.connecting = true;
    let ticket: string;
    try {
      ticket = await this.env.ticket();
    } catch (e) {
      this.connecting = false;
      // A key that is refused will not be accepted on a retry either.
      if (e instanceof ConveyorError && e.status >= 400 && e.status < 500 && e.status !== 429) {
        for (const sub of [...this.subs.values()]) sub.fail(e);
        this.subs.clear();
        return;
      }
      return this.dropped();
    }
    this.connecting = false;
    if (this.closed || this.subs.size === 0) return;
    const ws = new this.env.WebSocket(`${this.env.wsBase}/v1/ws?ticket=${encodeURIComponent(ticket)}`);
    this.ws = ws;
    let opened = false;
    const resumed = this.everOpened;
    ws.onopen = () => {
      opened = true;
      this.everOpened = true;
      this.refused = 0;
      for (const sub of this.subs.values()) {
        this.subscribe(sub);
        if (resumed) sub.notify("resumed", { afterSeq: sub.lastSeq, transport: "websocket" });
      }
    };
    ws.onmessage = (m: MessageEvent) => {
      // A frame arrived: the connection works, the next drop starts the backoff afresh.
      this.attempt = 0;
      this.route(JSON.parse(String(m.data)) as ServerFrame);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      if (!opened) this.refused++;
      this.dropped();
    };
  }

  private dropped(): void {
    if (this.closed || this.subs.size === 0) return;
    if (!this.everOpened && this.refused >= this.env.fallbackAfter) {
      const subs = [...this.subs.values()];
      if (this.unusable(subs)) {
        this.subs.clear();
        return;
      }
    }
    const delayMs = delayFor(this.attempt++, this.env.backoff);
    for (const sub of this.subs.values()) {
      sub.notify("reconnecting", { attempt: this.attempt, delayMs, transport: "websocket" });
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.connect();
    }, delayMs);
  }

  private route(frame: ServerFrame): void {
    if (frame.stream === undefined || frame.id === undefined) return;
    const sub = this.subs.get(`${frame.stream}\u0000${frame.id}`);
    if (!sub) return;
    switch (frame.type) {
      case "snapshot":
        sub.takeSnapshot(snapshotOf(frame));
        break;
      case "event":
        sub.takeEvent(frame as EventUpdate);
        break;
      case "unsubscribed":
        this.subs.delete(sub.key);
        sub.end(frame.reason === "terminal" ? "terminal" : "requested");
        this.idle();
        break;
      case "error": {
        this.subs.delete(sub.key);
        const detail = { code: frame.code, message: frame.message };
        sub.fail(new ConveyorError(STATUS[frame.code] ?? 400, frame.code, frame.message, detail));
        this.idle();
        break;
      }
    }
  }
}
