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
 * Stored updates kept for iterators created later (and for a second subscription to the
 * same thing): past this many, later iterators start from the live point.
 */
const HISTORY_LIMIT = 10_000;

/** Why `finished` rejects when the subscription was closed before its thing was final. */
export function closedError(): Error {
  return new DOMException("the subscription was closed", "AbortError");
}

/**
 * A followed thing: an async iterator of its updates and an event-emitter view of the
 * same. Each stored event arrives once and in order across reconnects (the subscription
 * keeps the last `seq` and resumes after it); streamed text is assembled in `text`.
 * Iteration ends when the thing is final and throws if the subscription fails; leaving
 * a `for await` loop early closes the subscription.
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
  /**
   * Resolves with the last stored event when the thing is final; rejects with the error
   * that ended the subscription, or an `AbortError` when it was closed first.
   */
  readonly finished: Promise<EventUpdate | undefined>;
  private state: "open" | "ended" | "failed" = "open";
  private failure: Error | undefined;
  private listeners = new Map<keyof SubscriptionEvents<View>, Set<Listener<never>>>();
  /** The snapshot and stored events so far (computed ones are not kept). */
  private history: LiveUpdate<View>[] | undefined = [];
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
    // Nobody awaiting `finished` must not make a close or a failure an unhandled rejection.
    this.finished.catch(() => {});
  }

  get key(): string {
    return `${this.stream}\u0000${this.id}`;
  }

  get open(): boolean {
    return this.state === "open";
  }

  /** What this subscription has received: a later one to the same thing starts from it. */
  get received(): readonly LiveUpdate<View>[] | undefined {
    return this.history;
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
    const q = new IteratorQueue<View>([...(this.history ?? [])], () => {
      this.iterators.delete(q);
      this.close();
    });
    if (this.state === "open") this.iterators.add(q);
    else q.close(this.failure);
    return q;
  }

  /** @internal From a transport: the thing's snapshot. */
  takeSnapshot(s: SnapshotUpdate<View>): void {
    if (this.state !== "open") return;
    // A snapshot older than what was seen adds nothing.
    if (this.snapshot && this.lastSeq !== undefined && s.seq <= this.lastSeq) return;
    this.snapshot = s;
    this.lastSeq = Math.max(this.lastSeq ?? s.seq, s.seq);
    this.keep(s);
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
      this.keep(e);
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
    if (reason === "terminal") this.settle.ok(this.last);
    else this.settle.fail(closedError());
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

  private keep(u: LiveUpdate<View>): void {
    if (!this.history) return;
    if (this.history.length >= HISTORY_LIMIT) this.history = undefined;
    else this.history.push(u);
  }

  private push(u: LiveUpdate<View>): void {
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

  /** Leaving the loop early (`break`, `return`, a throw) closes the subscription. */
  return(): Promise<IteratorResult<LiveUpdate<View>>> {
    if (!this.closed) {
      this.closed = true;
      this.items = [];
      this.onReturn();
    }
    return Promise.resolve({ value: undefined, done: true });
  }
}
