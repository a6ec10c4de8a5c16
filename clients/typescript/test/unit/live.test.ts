import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { ConveyorError, Live, type LiveUpdate } from "../../src/index.js";
import type { LiveEnv } from "../../src/live/env.js";
import { FakeSocket, ev, until } from "./fakes.js";

function live(over: Partial<LiveEnv> = {}, transport: "auto" | "websocket" | "sse" = "auto") {
  let tickets = 0;
  const env: LiveEnv = {
    httpBase: "http://conveyor.test",
    wsBase: "ws://conveyor.test",
    fetch: () => Promise.reject(new Error("no HTTP in this test")),
    ticket: async () => `wst_${++tickets}`,
    WebSocket: FakeSocket as unknown as typeof WebSocket,
    backoff: { initialMs: 5, maxMs: 20 },
    fallbackAfter: 2,
    ...over,
  };
  return { l: new Live(env, transport), tickets: () => tickets };
}

const snapshot = (seq: number) => ({ type: "snapshot", stream: "task", id: "t1", task_id: "t1", seq, task: { id: "t1", status: "PENDING" } });

beforeEach(() => FakeSocket.reset());
afterEach(() => FakeSocket.reset());

describe("one socket", () => {
  it("subscribes, delivers the snapshot then events in order, and ends when final", async () => {
    const { l } = live();
    const sub = l.task("t1");
    await until(() => FakeSocket.last().sent.length === 1, "the subscribe frame");
    const s = FakeSocket.last();
    expect(s.url).toBe("ws://conveyor.test/v1/ws?ticket=wst_1");
    expect(s.sent[0]).toEqual({ op: "subscribe", stream: "task", id: "t1" });
    s.frame(snapshot(1));
    s.frame(ev(2));
    s.frame(ev(3, { status: "SUCCESS", progress: 100 }));
    s.frame({ type: "unsubscribed", stream: "task", id: "t1", task_id: "t1", reason: "terminal" });
    const seen: LiveUpdate[] = [];
    for await (const u of sub) seen.push(u);
    expect(seen.map((u) => [u.type, u.seq])).toEqual([["snapshot", 1], ["event", 2], ["event", 3]]);
    expect(seen[0]?.type === "snapshot" && seen[0].view).toEqual({ id: "t1", status: "PENDING" });
    expect((await sub.finished)?.status).toBe("SUCCESS");
  });

  it("shares one socket between subscriptions and routes each frame to its own", async () => {
    const { l } = live();
    const a = l.task("t1");
    const b = l.stream("order", "o1");
    await until(() => FakeSocket.last().sent.length === 2, "two subscribe frames");
    expect(FakeSocket.all).toHaveLength(1);
    const s = FakeSocket.last();
    s.frame({ type: "event", stream: "order", id: "o1", seq: 4, status: "PAID" });
    s.frame(ev(2));
    expect(a.last?.seq).toBe(2);
    expect(b.last?.status).toBe("PAID");
    l.close();
  });

  it("resumes after a drop with the last seq: nothing missed, nothing twice", async () => {
    const { l, tickets } = live();
    const sub = l.task("t1");
    const resumed: (number | undefined)[] = [];
    sub.on("resumed", (r) => resumed.push(r.afterSeq));
    await until(() => FakeSocket.last().sent.length === 1);
    FakeSocket.last().frame(snapshot(1));
    FakeSocket.last().frame(ev(2));
    FakeSocket.last().drop();
    await until(() => FakeSocket.all.length === 2 && FakeSocket.last().sent.length === 1, "a new socket");
    const s = FakeSocket.last();
    expect(tickets()).toBe(2);
    expect(s.url).toContain("wst_2");
    expect(s.sent[0]).toEqual({ op: "subscribe", stream: "task", id: "t1", after_seq: 2 });
    expect(resumed).toEqual([2]);
    // A server that re-sends what the client has (it never should) is not shown twice.
    s.frame(ev(2));
    s.frame(ev(3));
    expect(sub.lastSeq).toBe(3);
    const seqs: number[] = [];
    sub.on("event", (e) => seqs.push(e.seq));
    s.frame(ev(3));
    s.frame(ev(4));
    expect(seqs).toEqual([4]);
    l.close();
  });

  it("backs off with jitter under a growing cap while the server stays away", async () => {
    const { l } = live();
    const sub = l.task("t1");
    const delays: number[] = [];
    sub.on("reconnecting", (r) => delays.push(r.delayMs));
    await until(() => FakeSocket.last().sent.length === 1);
    FakeSocket.last().frame(snapshot(1));
    FakeSocket.refuse = 4;
    FakeSocket.last().drop();
    await until(() => FakeSocket.all.length === 6 && FakeSocket.last().sent.length === 1, "the sixth socket");
    expect(delays).toHaveLength(5);
    // Full jitter: each wait is at most min(max, initial * 2^n).
    delays.forEach((d, n) => expect(d).toBeLessThanOrEqual(Math.min(20, 5 * 2 ** n)));
    // It stayed a WebSocket: one had opened before, so no fallback.
    expect(FakeSocket.last().sent[0]).toEqual({ op: "subscribe", stream: "task", id: "t1", after_seq: 1 });
    l.close();
  });

  it("keeps streamed text, and a reset discards a failed attempt's", async () => {
    const { l } = live();
    const sub = l.task("t1");
    const texts: string[] = [];
    sub.on("text", (t) => texts.push(t));
    await until(() => FakeSocket.last().sent.length === 1);
    const s = FakeSocket.last();
    s.frame(ev(1, { kind: "delta", delta: "Spring " }));
    s.frame(ev(2, { kind: "delta", delta: "tea" }));
    s.frame(ev(3, { kind: "reset" }));
    s.frame(ev(4, { kind: "delta", delta: "Green tea" }));
    expect(texts).toEqual(["Spring ", "Spring tea", "", "Green tea"]);
    expect(sub.text).toBe("Green tea");
    l.close();
  });

  it("passes a waiting task's place in line without moving the resume point", async () => {
    const { l } = live();
    const sub = l.task("t1");
    await until(() => FakeSocket.last().sent.length === 1);
    const s = FakeSocket.last();
    const iterator = sub[Symbol.asyncIterator]();
    s.frame(snapshot(3));
    s.frame(ev(3, { transient: true, status: "PENDING", line: { position: 2 } }));
    s.frame(ev(3, { transient: true, status: "PENDING", line: { position: 1 } }));
    expect(sub.lastSeq).toBe(3);
    const seen: LiveUpdate[] = [];
    l.close();
    for (let r = await iterator.next(); !r.done; r = await iterator.next()) seen.push(r.value);
    expect(seen.filter((u) => u.type === "event" && u.transient)).toHaveLength(2);
    // Computed events are not kept for iterators that start later.
    const later: LiveUpdate[] = [];
    for await (const u of sub) later.push(u);
    expect(later.map((u) => u.type)).toEqual(["snapshot"]);
  });

  it("fails only the subscription an error frame names", async () => {
    const { l } = live();
    const mine = l.task("t1");
    const other = l.task("t2");
    await until(() => FakeSocket.last().sent.length === 2);
    FakeSocket.last().frame({ type: "error", code: "not_found", message: "no such task", stream: "task", id: "t2" });
    await expect(other.finished).rejects.toMatchObject({ code: "not_found", status: 404 });
    await expect(async () => {
      for await (const _ of other) void _;
    }).rejects.toBeInstanceOf(ConveyorError);
    expect(mine.open).toBe(true);
    l.close();
    expect(mine.open).toBe(false);
  });

  it("a refused key fails every subscription instead of retrying", async () => {
    const { l } = live({
      ticket: () => Promise.reject(new ConveyorError(401, "unauthorized", "invalid key", { code: "unauthorized", message: "invalid key" })),
    });
    const sub = l.task("t1");
    await expect(sub.finished).rejects.toMatchObject({ code: "unauthorized" });
    expect(FakeSocket.all).toHaveLength(0);
  });

  it("unsubscribes on close and keeps the socket for the page's next subscription", async () => {
    const { l } = live();
    const a = l.task("t1");
    await until(() => FakeSocket.last().sent.length === 1);
    a.close();
    expect(FakeSocket.last().sent[1]).toEqual({ op: "unsubscribe", stream: "task", id: "t1" });
    l.task("t2");
    await until(() => FakeSocket.last().sent.length === 3);
    expect(FakeSocket.all).toHaveLength(1);
    l.close();
  });
});

describe("subscriptions that come and go", () => {
  it("a thing closed and followed again at once (React StrictMode) keeps the new subscription", async () => {
    const { l } = live();
    const a = l.task("t1");
    await until(() => FakeSocket.last().sent.length === 1);
    const s = FakeSocket.last();
    a.close();
    const b = l.task("t1");
    expect(s.sent.slice(1)).toEqual([
      { op: "unsubscribe", stream: "task", id: "t1" },
      { op: "subscribe", stream: "task", id: "t1" },
    ]);
    // The server answers the unsubscribe, then the new subscribe.
    s.frame({ type: "unsubscribed", stream: "task", id: "t1", task_id: "t1", reason: "requested" });
    s.frame(snapshot(1));
    expect(b.open).toBe(true);
    expect(b.snapshot?.seq).toBe(1);
    await expect(a.finished).rejects.toMatchObject({ name: "AbortError" });
    l.close();
  });

  it("two subscriptions to one thing share its server subscription; the later starts from what the first got", async () => {
    const { l } = live();
    const a = l.task("t1");
    await until(() => FakeSocket.last().sent.length === 1);
    const s = FakeSocket.last();
    s.frame(snapshot(1));
    s.frame(ev(2, { kind: "delta", delta: "Green " }));
    const b = l.task("t1");
    expect(b.snapshot?.seq).toBe(1);
    expect(b.text).toBe("Green ");
    s.frame(ev(3, { kind: "delta", delta: "tea" }));
    expect([a.text, b.text]).toEqual(["Green tea", "Green tea"]);
    expect(s.sent).toHaveLength(1);
    a.close();
    expect(s.sent).toHaveLength(1);
    s.frame(ev(4, { status: "SUCCESS" }));
    s.frame({ type: "unsubscribed", stream: "task", id: "t1", task_id: "t1", reason: "terminal" });
    expect((await b.finished)?.seq).toBe(4);
    l.close();
  });

  it("a lookup the server could not make (unavailable) is asked again, not failed", async () => {
    const { l } = live();
    const sub = l.task("t1");
    await until(() => FakeSocket.last().sent.length === 1);
    const s = FakeSocket.last();
    s.frame({ type: "error", code: "unavailable", message: "try again", stream: "task", id: "t1" });
    await until(() => s.sent.length === 2, "the second subscribe");
    expect(s.sent[1]).toEqual({ op: "subscribe", stream: "task", id: "t1" });
    s.frame(snapshot(1));
    expect(sub.open).toBe(true);
    expect(sub.snapshot?.seq).toBe(1);
    l.close();
  });

  it("leaving a for-await loop early closes the subscription", async () => {
    const { l } = live();
    const sub = l.task("t1");
    await until(() => FakeSocket.last().sent.length === 1);
    const s = FakeSocket.last();
    s.frame(snapshot(1));
    for await (const u of sub) {
      expect(u.type).toBe("snapshot");
      break;
    }
    expect(sub.open).toBe(false);
    expect(s.sent[1]).toEqual({ op: "unsubscribe", stream: "task", id: "t1" });
    l.close();
  });

  it("frames of a socket already replaced are ignored", async () => {
    const { l } = live();
    const sub = l.task("t1");
    await until(() => FakeSocket.last().sent.length === 1);
    const old = FakeSocket.last();
    old.frame(snapshot(1));
    old.drop();
    await until(() => FakeSocket.all.length === 2 && FakeSocket.last().sent.length === 1);
    old.onmessage?.({ data: JSON.stringify(ev(5)) });
    expect(sub.lastSeq).toBe(1);
    l.close();
  });

  it("a closed client fails what is asked of it afterwards, and stops reconnecting", async () => {
    const { l } = live();
    const sub = l.task("t1");
    await until(() => FakeSocket.last().sent.length === 1);
    l.close();
    await expect(sub.finished).rejects.toMatchObject({ name: "AbortError" });
    await expect(l.task("t2").finished).rejects.toThrow("closed");
    await new Promise((r) => setTimeout(r, 50));
    expect(FakeSocket.all).toHaveLength(1);
  });

  it("a subscription made while the server is away is not told it resumed", async () => {
    const { l } = live();
    const first = l.task("t1");
    await until(() => FakeSocket.last().sent.length === 1);
    FakeSocket.refuse = 1;
    FakeSocket.last().drop();
    const late = l.task("t2");
    const told: string[] = [];
    first.on("resumed", () => told.push("first"));
    late.on("resumed", () => told.push("late"));
    await until(() => FakeSocket.all.length === 3 && FakeSocket.last().sent.length === 2, "the third socket");
    expect(told).toEqual(["first"]);
    l.close();
  });
});

describe("SSE fallback", () => {
  function sseBody(text: string): ReadableStream<Uint8Array> {
    const bytes = new TextEncoder().encode(text);
    // Cut into 7-byte chunks: events and lines split across reads.
    return new ReadableStream({
      start(c) {
        for (let i = 0; i < bytes.length; i += 7) c.enqueue(bytes.slice(i, i + 7));
        c.close();
      },
    });
  }

  it("switches to SSE when WebSockets are refused, and resumes with Last-Event-ID", async () => {
    const asked: (string | null)[] = [];
    const bodies = [
      'event: snapshot\r\nid: 1\r\ndata: {"id":"t1","status":"PENDING"}\r\n\r\n: keep-alive\n\nevent: progress\nid: 2\ndata: {"type":"event","seq":2,\ndata: "status":"PROCESSING"}\n\n',
      // The first stream broke without `end`: the second resumes after 2.
      'event: progress\nid: 3\ndata: {"type":"event","seq":3,"status":"SUCCESS"}\n\nevent: end\ndata: {"reason":"terminal"}\n\n',
    ];
    const fetch = async (r: Request) => {
      expect(r.url).toBe("http://conveyor.test/v1/streams/task/t1/events");
      asked.push(r.headers.get("last-event-id"));
      return new Response(sseBody(bodies.shift() ?? ""), { headers: { "content-type": "text/event-stream" } });
    };
    FakeSocket.refuse = 2;
    const { l } = live({ fetch });
    const sub = l.task("t1");
    const seen: LiveUpdate[] = [];
    for await (const u of sub) seen.push(u);
    expect(FakeSocket.all).toHaveLength(2);
    expect(asked).toEqual([null, "2"]);
    expect(seen.map((u) => [u.type, u.seq])).toEqual([["snapshot", 1], ["event", 2], ["event", 3]]);
    expect(seen[1]).toMatchObject({ status: "PROCESSING", stream: "task", id: "t1" });
    expect((await sub.finished)?.status).toBe("SUCCESS");
  });

  it("uses SSE from the start where there is no WebSocket", async () => {
    const fetch = async () =>
      new Response(sseBody('event: snapshot\nid: 5\ndata: {"status":"SUCCESS"}\n\nevent: end\ndata: {"reason":"terminal"}\n\n'));
    const l = new Live(
      { httpBase: "http://conveyor.test", wsBase: "ws://conveyor.test", fetch, ticket: async () => "x", WebSocket: undefined, backoff: undefined, fallbackAfter: 2 },
      "auto",
    );
    const sub = l.task("t1");
    await sub.finished;
    expect(sub.snapshot?.view).toEqual({ status: "SUCCESS" });
    expect(FakeSocket.all).toHaveLength(0);
  });

  it("a handler that throws does not break the stream; 429 is retried, 403 is not", async () => {
    const statuses = [429, 200, 403];
    const fetch = async () => {
      const status = statuses.shift() ?? 403;
      if (status !== 200) return new Response('{"error":{"code":"x","message":"y"}}', { status, headers: { "retry-after": "0" } });
      return new Response(sseBody("data: 1\n\ndata: 2\n\n"));
    };
    const got: string[] = [];
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    process.on("uncaughtException", onError);
    const { l } = live({ fetch });
    const how = await l.events("/v1/admin/ops/stream", {
      onMessage: (m) => {
        got.push(m.data);
        if (m.data === "1") throw new Error("a bug in the page");
      },
    });
    await new Promise((r) => setTimeout(r, 10));
    process.off("uncaughtException", onError);
    expect(how).toBe("refused");
    expect(got).toEqual(["1", "2"]);
    expect(errors).toHaveLength(1);
  });

  it("an SSE 404 fails the subscription", async () => {
    const fetch = async () => new Response(JSON.stringify({ error: { code: "not_found", message: "stream item not found" } }), { status: 404 });
    const { l } = live({ fetch }, "sse");
    await expect(l.task("t1").finished).rejects.toMatchObject({ status: 404, code: "not_found" });
  });
});
