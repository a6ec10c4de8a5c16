import { describe, expect, it } from "vitest";

import { ConveyorError, createConveyor, delayFor } from "../../src/index.js";
import { conveyorFetch } from "../../src/http.js";

describe("retries", () => {
  it("waits for Retry-After on 429 and sends the same Idempotency-Key again", async () => {
    const seen: { key: string | null; auth: string | null; at: number }[] = [];
    const fetch = async (r: Request) => {
      seen.push({ key: r.headers.get("idempotency-key"), auth: r.headers.get("authorization"), at: Date.now() });
      expect(await r.json()).toEqual({ kind: "copywriting", prompt: "tea" });
      if (seen.length === 1) {
        return new Response(JSON.stringify({ error: { code: "rate_limited", message: "slow down" } }), { status: 429, headers: { "retry-after": "0.05" } });
      }
      return new Response(JSON.stringify({ id: "t1", status: "PENDING" }), { status: 202, headers: { "content-type": "application/json" } });
    };
    const c = createConveyor({ baseUrl: "http://conveyor.test", apiKey: "cvk_x", fetch });
    const task = await c.tasks.submit({ kind: "copywriting", prompt: "tea" });
    expect(task).toMatchObject({ id: "t1" });
    expect(seen).toHaveLength(2);
    expect(seen[0]?.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]?.key).toBe(seen[0]?.key);
    expect(seen[0]?.auth).toBe("Bearer cvk_x");
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(45);
  });

  it("reads Retry-After as an HTTP date too, and an abort ends the wait", async () => {
    let calls = 0;
    const c = conveyorFetch({
      fetch: async () => {
        calls++;
        const at = new Date(Date.now() + 20_000).toUTCString();
        return new Response("{}", { status: 503, headers: { "retry-after": at } });
      },
    });
    const abort = new AbortController();
    const waiting = c(new Request("http://conveyor.test/v1/me", { signal: abort.signal }));
    await new Promise((r) => setTimeout(r, 20));
    abort.abort();
    await expect(waiting).rejects.toMatchObject({ name: "AbortError" });
    expect(calls).toBe(1);
  });

  it("a caller's own Idempotency-Key is kept", async () => {
    let key: string | null = null;
    const c = createConveyor({
      baseUrl: "http://conveyor.test",
      fetch: async (r: Request) => {
        key = r.headers.get("idempotency-key");
        return Response.json({ id: "t1" }, { status: 202 });
      },
    });
    await c.tasks.submit({ kind: "image", prompt: "tea" }, { idempotencyKey: "reload-safe-1" });
    expect(key).toBe("reload-safe-1");
  });

  it("throws the API's error code once retries are spent or the wait is too long", async () => {
    let calls = 0;
    const c = createConveyor({
      baseUrl: "http://conveyor.test",
      maxRetryAfterMs: 1000,
      fetch: async () => {
        calls++;
        return new Response(JSON.stringify({ error: { code: "insufficient_credits", message: "needs 5", needed: 5, balance: 1 } }), {
          status: 402,
        });
      },
    });
    const e = await c.tasks.get("t1").catch((e: unknown) => e);
    expect(e).toBeInstanceOf(ConveyorError);
    expect(e).toMatchObject({ status: 402, code: "insufficient_credits", detail: { needed: 5, balance: 1 } });
    expect(calls).toBe(1);
    let slow = 0;
    const d = createConveyor({
      baseUrl: "http://conveyor.test",
      maxRetryAfterMs: 1000,
      fetch: async () => {
        slow++;
        return new Response('{"error":{"code":"overloaded","message":"later"}}', { status: 503, headers: { "retry-after": "60" } });
      },
    });
    await expect(d.tasks.get("t1")).rejects.toMatchObject({ code: "overloaded", retryAfterMs: 60_000 });
    expect(slow).toBe(1);
  });

  it("repeats a GET after a network error but never a POST without a key", async () => {
    let gets = 0;
    const get = conveyorFetch({
      backoff: { initialMs: 1 },
      fetch: async () => {
        if (++gets < 3) throw new TypeError("fetch failed");
        return new Response("ok");
      },
    });
    expect(await (await get(new Request("http://conveyor.test/v1/me"))).text()).toBe("ok");
    expect(gets).toBe(3);
    let posts = 0;
    const post = conveyorFetch({
      backoff: { initialMs: 1 },
      fetch: async () => {
        posts++;
        throw new TypeError("fetch failed");
      },
    });
    await expect(post(new Request("http://conveyor.test/v1/payments", { method: "POST", body: "{}" }))).rejects.toThrow("fetch failed");
    expect(posts).toBe(1);
  });
});

describe("backoff", () => {
  it("grows to its cap with full jitter", () => {
    expect(delayFor(0, { initialMs: 100 }, () => 1)).toBe(100);
    expect(delayFor(3, { initialMs: 100 }, () => 1)).toBe(800);
    expect(delayFor(30, { initialMs: 100, maxMs: 5000 }, () => 1)).toBe(5000);
    expect(delayFor(3, { initialMs: 100 }, () => 0)).toBe(0);
  });
});
