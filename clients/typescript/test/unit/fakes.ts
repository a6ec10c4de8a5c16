/** A WebSocket the test drives: it records what the client sends and opens, speaks and
 * closes when the test says so. */
export class FakeSocket {
  static all: FakeSocket[] = [];
  static refuse = 0;
  readyState = 0;
  sent: Record<string, unknown>[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((m: { data: string }) => void) | null = null;
  onclose: ((e: { code: number }) => void) | null = null;
  onerror: (() => void) | null = null;

  constructor(readonly url: string) {
    FakeSocket.all.push(this);
    queueMicrotask(() => {
      if (FakeSocket.refuse > 0) {
        FakeSocket.refuse--;
        this.readyState = 3;
        this.onclose?.({ code: 1006 });
      } else {
        this.readyState = 1;
        this.onopen?.();
      }
    });
  }

  send(data: string): void {
    if (this.readyState !== 1) throw new Error("not open");
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
  }

  close(code = 1000): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    queueMicrotask(() => this.onclose?.({ code }));
  }

  /** A frame from the server. */
  frame(f: Record<string, unknown>): void {
    this.onmessage?.({ data: JSON.stringify(f) });
  }

  /** The connection breaks (no close frame). */
  drop(): void {
    this.close(1006);
  }

  static last(): FakeSocket {
    const s = FakeSocket.all.at(-1);
    if (!s) throw new Error("no socket yet");
    return s;
  }

  static reset(): void {
    FakeSocket.all = [];
    FakeSocket.refuse = 0;
  }
}

/** Waits until `check` holds (polling the event loop), or fails after a second. */
export async function until(check: () => boolean, what = "condition"): Promise<void> {
  const start = Date.now();
  const holds = () => {
    try {
      return check();
    } catch {
      return false;
    }
  };
  while (!holds()) {
    if (Date.now() - start > 1000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

export function ev(seq: number, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: "event", stream: "task", id: "t1", task_id: "t1", seq, status: "PROCESSING", progress: seq * 10, ...fields };
}
