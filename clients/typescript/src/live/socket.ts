import { delayFor } from "../backoff.js";
import { ConveyorError } from "../errors.js";
import { type EventUpdate, type ServerFrame, snapshotOf } from "./frames.js";
import type { LiveEnv } from "./env.js";
import { type Feed, Subscription } from "./subscription.js";

/** How long an unused socket stays open for the page's next subscription. */
const LINGER_MS = 10_000;

/** A socket that stayed up this long starts the next drop's backoff afresh. */
const STABLE_MS = 5_000;

/** Error frames that end a subscription; any other (`unavailable`) is retried. */
const FINAL: Record<string, number> = { not_found: 404, unknown_stream: 404, too_many_subscriptions: 429, invalid_command: 400 };

/** The subscriptions of one thing: one server subscription, fanned out here. */
interface Group {
  subs: Set<Subscription<unknown>>;
  /** Subscribed before: the next subscribe (on a new socket) is a resume. */
  followed: boolean;
  /** Retries of an `unavailable` subscribe. */
  retries: number;
  retry: ReturnType<typeof setTimeout> | undefined;
}

/** Node: timers must not keep a process alive for a socket nobody waits on. */
function unref(t: ReturnType<typeof setTimeout>): ReturnType<typeof setTimeout> {
  (t as { unref?: () => void }).unref?.();
  return t;
}

/**
 * One WebSocket for every subscription of a page: a ticket, the socket, a `subscribe`
 * per thing (subscriptions to the same thing share it); after a drop, a new ticket and
 * socket after a backoff with jitter, and each thing resubscribed after its last `seq`
 * (nothing missed, nothing twice).
 */
export class SocketFeed implements Feed {
  private groups = new Map<string, Group>();
  /** `unsubscribe`s sent whose `unsubscribed` has not come back, per thing. */
  private unsubscribing = new Map<string, number>();
  private ws: WebSocket | undefined;
  private connecting = false;
  private attempt = 0;
  /** Opens that failed in a row before a socket ever opened (a proxy that blocks them). */
  private refused = 0;
  private everOpened = false;
  private reconnect: ReturnType<typeof setTimeout> | undefined;
  private linger: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(
    private env: LiveEnv,
    /** Called with the subscriptions when WebSockets cannot be opened here at all. */
    private unusable: (subs: Subscription<unknown>[]) => boolean,
  ) {}

  attach(sub: Subscription<unknown>): void {
    if (this.closed) return sub.fail(new Error("conveyor: the client was closed"));
    sub.feed = this;
    clearTimeout(this.linger);
    this.linger = undefined;
    const group = this.groups.get(sub.key);
    if (group) {
      // Another subscription to the same thing: it starts from what the first received.
      for (const u of group.subs.values().next().value?.received ?? []) {
        if (u.type === "snapshot") sub.takeSnapshot(u);
        else sub.takeEvent(u);
      }
      group.subs.add(sub);
      return;
    }
    this.groups.set(sub.key, { subs: new Set([sub]), followed: false, retries: 0, retry: undefined });
    if (this.ws?.readyState === 1) this.subscribe(sub.key);
    // While a reconnect waits out its backoff, the new subscription waits with it.
    else if (!this.reconnect) void this.connect();
  }

  detach(sub: Subscription<unknown>): void {
    const group = this.groups.get(sub.key);
    if (!group?.subs.delete(sub) || group.subs.size > 0) return;
    this.forget(sub.key, group);
    if (this.ws?.readyState === 1) {
      this.unsubscribing.set(sub.key, (this.unsubscribing.get(sub.key) ?? 0) + 1);
      this.ws.send(JSON.stringify({ op: "unsubscribe", stream: sub.stream, id: sub.id }));
    }
    this.idle();
  }

  /** Closes the socket; its subscriptions end (`requested`), later ones fail. */
  close(): void {
    this.closed = true;
    clearTimeout(this.reconnect);
    clearTimeout(this.linger);
    for (const [key, group] of [...this.groups]) {
      this.forget(key, group);
      for (const sub of group.subs) sub.end("requested");
    }
    this.ws?.close(1000);
    this.ws = undefined;
  }

  /** For tests and measurements: drops the socket as a network failure would. */
  drop(): void {
    this.ws?.close(4000, "dropped by the client");
  }

  private forget(key: string, group: Group): void {
    clearTimeout(group.retry);
    this.groups.delete(key);
  }

  /** The group's resume point: the furthest any of its subscriptions got. */
  private subscribe(key: string, resuming = true): void {
    const group = this.groups.get(key);
    const first = group?.subs.values().next().value;
    if (!group || !first || this.ws?.readyState !== 1) return;
    const frame: Record<string, unknown> = { op: "subscribe", stream: first.stream, id: first.id };
    const seqs = [...group.subs].map((s) => s.lastSeq).filter((s): s is number => s !== undefined);
    if (seqs.length > 0) frame.after_seq = Math.max(...seqs);
    this.ws.send(JSON.stringify(frame));
    const before = group.followed;
    group.followed = true;
    if (resuming && before) {
      for (const sub of group.subs) sub.notify("resumed", { afterSeq: frame.after_seq as number | undefined, transport: "websocket" });
    }
  }

  private idle(): void {
    if (this.groups.size > 0) return;
    // Nothing to follow: no reconnect, and the socket closes unless something comes.
    clearTimeout(this.reconnect);
    this.reconnect = undefined;
    if (this.linger) return;
    this.linger = unref(
      setTimeout(() => {
        this.linger = undefined;
        if (this.groups.size === 0) {
          const ws = this.ws;
          this.ws = undefined;
          ws?.close(1000);
        }
      }, LINGER_MS),
    );
  }

  private async connect(): Promise<void> {
    if (this.connecting || this.ws || this.closed || this.groups.size === 0) return;
    this.connecting = true;
    let ticket: string;
    try {
      ticket = await this.env.ticket();
    } catch (e) {
      this.connecting = false;
      // A key that is refused will not be accepted on a retry either.
      if (e instanceof ConveyorError && e.status >= 400 && e.status < 500 && e.status !== 429) {
        for (const [key, group] of [...this.groups]) {
          this.forget(key, group);
          for (const sub of group.subs) sub.fail(e);
        }
        return;
      }
      return this.dropped(false);
    }
    this.connecting = false;
    if (this.closed || this.groups.size === 0) return;
    let ws: WebSocket;
    try {
      ws = new this.env.WebSocket(`${this.env.wsBase}/v1/ws?ticket=${encodeURIComponent(ticket)}`);
    } catch {
      // A URL the runtime refuses (mixed content): as a refused open.
      return this.dropped(false);
    }
    this.ws = ws;
    let openedAt = 0;
    ws.onopen = () => {
      openedAt = Date.now();
      this.everOpened = true;
      this.refused = 0;
      for (const key of this.groups.keys()) this.subscribe(key);
    };
    ws.onmessage = (m: MessageEvent) => {
      // Frames of a socket already replaced are not this socket's business.
      if (this.ws !== ws) return;
      let frame: ServerFrame;
      try {
        frame = JSON.parse(String(m.data)) as ServerFrame;
      } catch {
        return;
      }
      this.route(frame);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.unsubscribing.clear();
      if (openedAt > 0 && Date.now() - openedAt >= STABLE_MS) this.attempt = 0;
      this.dropped(openedAt > 0);
    };
  }

  private dropped(opened: boolean): void {
    if (this.closed || this.groups.size === 0) return;
    if (!opened) this.refused++;
    if (!this.everOpened && this.refused >= this.env.fallbackAfter) {
      const subs = [...this.groups.values()].flatMap((g) => [...g.subs]);
      if (this.unusable(subs)) {
        for (const [key, group] of [...this.groups]) this.forget(key, group);
        return;
      }
    }
    const delayMs = delayFor(this.attempt++, this.env.backoff);
    for (const group of this.groups.values()) {
      for (const sub of group.subs) sub.notify("reconnecting", { attempt: this.attempt, delayMs, transport: "websocket" });
    }
    clearTimeout(this.reconnect);
    this.reconnect = unref(
      setTimeout(() => {
        this.reconnect = undefined;
        void this.connect();
      }, delayMs),
    );
  }

  private route(frame: ServerFrame): void {
    if (frame.stream === undefined || frame.id === undefined) return;
    const key = `${frame.stream}\u0000${frame.id}`;
    if (frame.type === "unsubscribed" && frame.reason === "requested") {
      const pending = this.unsubscribing.get(key) ?? 0;
      if (pending > 0) {
        // The answer to an unsubscribe of ours (a later subscription to the thing may
        // already be under way: it is not the one that ended).
        if (pending === 1) this.unsubscribing.delete(key);
        else this.unsubscribing.set(key, pending - 1);
        return;
      }
    }
    const group = this.groups.get(key);
    if (!group) return;
    switch (frame.type) {
      case "snapshot": {
        const s = snapshotOf(frame);
        for (const sub of group.subs) sub.takeSnapshot(s);
        group.retries = 0;
        break;
      }
      case "event":
        for (const sub of group.subs) sub.takeEvent(frame as EventUpdate);
        group.retries = 0;
        break;
      case "unsubscribed":
        this.forget(key, group);
        for (const sub of group.subs) sub.end(frame.reason === "terminal" ? "terminal" : "requested");
        this.idle();
        break;
      case "error": {
        const status = FINAL[frame.code];
        if (status === undefined) {
          // The server could not look it up just now ("try again"): subscribe again.
          clearTimeout(group.retry);
          group.retry = unref(setTimeout(() => this.subscribe(key, false), delayFor(group.retries++, this.env.backoff)));
          break;
        }
        this.forget(key, group);
        const detail = { code: frame.code, message: frame.message };
        for (const sub of group.subs) sub.fail(new ConveyorError(status, frame.code, frame.message, detail));
        this.idle();
        break;
      }
    }
  }
}
