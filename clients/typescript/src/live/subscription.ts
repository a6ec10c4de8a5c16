import type { ConveyorError } from "../errors.js";
import type { EventUpdate, LiveUpdate, SnapshotUpdate } from "./frames.js";

/** What a subscription tells its listeners. */
export interface SubscriptionEvents<View> {
  /** The thing as it stands when the subscription starts. */
  snapshot: SnapshotUpdate<View>;
  /** Every event, stored or computed, in order, each once. */
  event: EventUpdate;
  /** The assembled streamed text after a piece (or a reset) arrived. */
  text: string;
  /** The connection dropped; the next attempt comes after `delayMs`. */
  reconnecting: { attempt: number; delayMs: number; transport: "websocket" | "sse" };
  /** Following again after a drop, from the event after `afterSeq`. */
  resumed: { afterSeq: number | undefined; transport: "websocket" | "sse" };
  /** The thing is final (`terminal`) or the subscription was closed (`requested`). */
  end: { reason: "terminal" | "requested" };
  /** The subscription cannot go on (not found, not allowed, the key revoked). */
  error: ConveyorError | Error;
}

type Listener<T> = (value: T) => void;

/** How a subscription reaches the socket or stream that feeds it. */
export interface Feed {
  detach(sub: Subscription<unknown>): void;
}

/**
 * A followed thing: an async iterator of its updates and an event-emitter view of the
 * same. Each stored event arrives once and in order across reconnects (the subscription
 * keeps the last `seq` and resumes after it); streamed text is assembled in `text`.
 * Iteration ends when the thing is final; it throws if the subscription fails.
 */
export class Subscription<View = Record<string, unknown>> implements AsyncIterable<LiveUpdate<View>> {
  /** The last stored event's sequence number seen (resumes start after it). */
  lastSeq: number | undefined;
  /** The streamed text so far (pieces appended, cleared on a retried attempt). */
  text = "";
  /** The latest snapshot. */
  snapshot: SnapshotUpdate<View> | undefined;
  /** The latest stored event. */
  last: EventUpdate | undefined;
  /** Settles when the subscription ends: with the last stored event, or the failure. */
  readonly finished: Promise<EventUpdate | undefined>;
  private state: "open" | "ended" | "failed" = "open";
  private failure: Error | undefined;
  private listeners = new Map<keyof SubscriptionEvents<View>, Set<Listener<never>>>();
  /** Updates for iterators not yet created (the first one gets them all). */
  private backlog: LiveUpdate<View>[] | undefined = [];
  private iterators = new Set<IteratorQueue<View>>();
  private settle!: { ok: (e: EventUpdate | undefined) => void; fail: (e: Error) => void };
  feed: Feed | undefined;

  constructor(
    readonly stream: string,
    readonly id: string,
    after?: number,
  ) {
    this.lastSeq = after;
    this.finished = new Promise((ok, fail) => (this.settle = { ok, fail }));
    // Nobody awaiting `finished` must not make a failure an unhandled rejection.
    this.finished.catch(() => {});
  }

  get key(): string {
    return `${this.stream}\u0000${this.id}`;
  }

  get open(): boolean {
    return this.state === "open";
  }

  on<K extends keyof SubscriptionEvents<View>>(name: K, fn: Listener<SubscriptionEvents<View>[K]>): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(fn as Listener<never>);
    return () => this.off(name, fn);
  }

  off<K extends keyof SubscriptionEvents<View>>(name: K, fn: Listener<SubscriptionEvents<View>[K]>): void {
    this.listeners.get(name)?.delete(fn as Listener<never>);
  }

  /** Stops following (the socket stays for the page's other subscriptions). */
  close(): void {
    if (this.state !== "open") return;
    this.feed?.detach(this as Subscription<unknown>);
    this.end("requested");
  }

  [Symbol.asyncIterator](): AsyncIterator<LiveUpdate<View>> {
    const q = new IteratorQueue<View>(this.backlog ?? [], () => this.iterators.delete(q));
    this.backlog = undefined;
    if (this.state === "open") this.iterators.add(q);
    else q.close(this.failure);
    return q;
  }

  /** @internal From a transport: the thing's snapshot. */
  takeSnapshot(s: SnapshotUpdate<View>): void {
    if (this.state !== "open") return;
    this.snapshot = s;
    this.lastSeq = Math.max(this.lastSeq ?? s.seq, s.seq);
    this.push(s);
    this.emit("snapshot", s);
  }

  /** @internal From a transport: one event. Stored ones already seen are dropped. */
  takeEvent(e: EventUpdate): void {
    if (this.state !== "open") return;
    if (!e.transient) {
      if (this.lastSeq !== undefined && e.seq <= this.lastSeq) return;
      this.lastSeq = e.seq;
      this.last = e;
    }
    this.push(e);
    this.emit("event", e);
    if (e.kind === "delta" && typeof e.delta === "string") {
      this.text += e.delta;
      this.emit("text", this.text);
    } else if (e.kind === "reset") {
      this.text = "";
      this.emit("text", this.text);
    }
  }

  /** @internal */
  notify<K extends "reconnecting" | "resumed">(name: K, value: SubscriptionEvents<View>[K]): void {
    this.emit(name, value);
  }

  /** @internal The thing is final, or the subscription was closed. */
  end(reason: "terminal" | "requested"): void {
    if (this.state !== "open") return;
    this.state = "ended";
    for (const q of this.iterators) q.close();
    this.iterators.clear();
    this.emit("end", { reason });
    this.settle.ok(this.last);
  }

  /** @internal The subscription cannot go on. */
  fail(error: Error): void {
    if (this.state !== "open") return;
    this.state = "failed";
    this.failure = error;
    for (const q of this.iterators) q.close(error);
    this.iterators.clear();
    this.emit("error", error as SubscriptionEvents<View>["error"]);
    this.settle.fail(error);
  }

  private push(u: LiveUpdate<View>): void {
    this.backlog?.push(u);
    for (const q of this.iterators) q.push(u);
  }

  private emit<K extends keyof SubscriptionEvents<View>>(name: K, value: SubscriptionEvents<View>[K]): void {
    for (const fn of this.listeners.get(name) ?? []) {
      try {
        (fn as Listener<SubscriptionEvents<View>[K]>)(value);
      } catch (e) {
        // A listener's bug must not stop the stream (nor the other listeners).
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }
}

/** One iterator's queue of updates. */
class IteratorQueue<View> implements AsyncIterator<LiveUpdate<View>> {
  private waiting: { ok: (r: IteratorResult<LiveUpdate<View>>) => void; fail: (e: Error) => void } | undefined;
  private closed = false;
  private error: Error | undefined;

  constructor(
    private items: LiveUpdate<View>[],
    private onReturn: () => void,
  ) {}

  push(u: LiveUpdate<View>): void {
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w.ok({ value: u, done: false });
    } else this.items.push(u);
  }

  close(error?: Error): void {
    this.closed = true;
    this.error = error;
    if (this.waiting && this.items.length === 0) {
      const w = this.waiting;
      this.waiting = undefined;
      if (error) w.fail(error);
      else w.ok({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<LiveUpdate<View>>> {
    const item = this.items.shift();
    if (item) return Promise.resolve({ value: item, done: false });
    if (this.closed) {
      if (this.error) {
        const e = this.error;
        this.error = undefined;
        return Promise.reject(e);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((ok, fail) => (this.waiting = { ok, fail }));
  }

  return(): Promise<IteratorResult<LiveUpdate<View>>> {
    this.closed = true;
    this.items = [];
    this.onReturn();
    return Promise.resolve({ value: undefined, done: true });
  }
}
