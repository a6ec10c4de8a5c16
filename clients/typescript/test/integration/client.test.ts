// Against a running `conveyor serve` (the repository's scripts/with-server.sh starts one on the embedded
// defaults): CONVEYOR_URL, CONVEYOR_KEY.
import { describe, expect, it } from "vitest";
import WebSocket from "ws";

import { ConveyorError, type EventUpdate, type LiveUpdate, createConveyor } from "../../src/index.js";

const baseUrl = process.env.CONVEYOR_URL ?? "";
const apiKey = process.env.CONVEYOR_KEY ?? "";
if (!baseUrl || !apiKey) throw new Error("CONVEYOR_URL and CONVEYOR_KEY are not set: run under the repository's scripts/with-server.sh");

function client(transport: "websocket" | "sse" = "websocket") {
  return createConveyor({
    baseUrl,
    apiKey,
    live: { transport, WebSocket: WebSocket as unknown as typeof globalThis.WebSocket, backoff: { initialMs: 200, maxMs: 2000 } },
  });
}

/** The task's stored events as the server lists them (SSE from the start, after it ended). */
async function storedSeqs(id: string): Promise<number[]> {
  const res = await fetch(`${baseUrl}/v1/tasks/${id}/events`, {
    headers: { authorization: `Bearer ${apiKey}`, "last-event-id": "0" },
  });
  const text = await res.text();
  return [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
}

function image(stepMs: number) {
  return { kind: "image" as const, prompt: "green tea, spring sale", params: { simulate: { step_ms: stepMs } } };
}

describe.each(["websocket", "sse"] as const)("a task watched over %s", (transport) => {
  it("survives two dropped connections: every stored event once, in order, then the end", async () => {
    const c = client(transport);
    const task = await c.tasks.submit(image(1500));
    expect(task.status).toBe("PENDING");
    const sub = c.live.task(task.id);
    const resumes: number[] = [];
    const updates: LiveUpdate[] = [];
    let drops = 0;
    let droppedAt = 0;
    sub.on("resumed", () => {
      resumes.push(Date.now());
      console.log(`${transport}: ${Date.now() - droppedAt} ms from a forced disconnect to the resumed subscription`);
    });
    let seen = 0;
    sub.on("event", (e) => {
      if (e.transient) return;
      seen++;
      if (droppedAt) {
        console.log(`${transport}: ${Date.now() - droppedAt} ms from a forced disconnect to the resumed stream's next event`);
        droppedAt = 0;
      }
      // Drop the connection after the 1st and the 4th stored event it shows.
      if (seen === 1 || seen === 4) {
        drops++;
        droppedAt = Date.now();
        c.live.dropConnection();
      }
    });
    for await (const u of sub) updates.push(u);
    expect(drops).toBe(2);
    expect(resumes).toHaveLength(2);
    const stored = updates.filter((u): u is EventUpdate => u.type === "event" && !u.transient).map((u) => u.seq);
    const snapshot = updates[0];
    expect(snapshot?.type).toBe("snapshot");
    const all = await storedSeqs(task.id);
    expect(stored).toEqual(all.filter((s) => s > (snapshot?.seq ?? 0)));
    expect((await sub.finished)?.status).toBe("SUCCESS");
    const done = await c.tasks.get(task.id);
    expect(done.status).toBe("SUCCESS");
    c.close();
  }, 30_000);
});

describe("REST", () => {
  it("answers typed errors with the API's code and field", async () => {
    const c = client();
    const e = await c.tasks.submit({ kind: "image", prompt: "" }).catch((e: unknown) => e);
    expect(e).toBeInstanceOf(ConveyorError);
    expect(e).toMatchObject({ status: 422, code: "invalid_field" });
    const missing = await c.tasks.get("0193aaaa-0000-7000-8000-000000000000").catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, code: "not_found" });
  });

  it("one Idempotency-Key, one task, however often it is sent", async () => {
    const c = client();
    const key = crypto.randomUUID();
    const a = await c.tasks.submit(image(100), { idempotencyKey: key });
    const b = await c.tasks.submit(image(100), { idempotencyKey: key });
    expect(b.id).toBe(a.id);
    const other = await c.tasks.submit(image(100));
    expect(other.id).not.toBe(a.id);
  });

  it("cancels a task and the live view ends with it", async () => {
    const c = client();
    const task = await c.tasks.submit(image(20_000));
    const sub = c.live.task(task.id);
    await new Promise<void>((ok) => sub.on("snapshot", () => ok()));
    const canceled = await c.tasks.cancel(task.id);
    expect(canceled.status).toBe("CANCELED");
    expect((await sub.finished)?.status).toBe("CANCELED");
    c.close();
  });

  it("the typed client reaches every kind of operation", async () => {
    const c = client();
    const me = await c.api.GET("/v1/me");
    expect(me.response.status).toBe(200);
    expect(me.data?.credits).toBeGreaterThan(0);
  });
});
