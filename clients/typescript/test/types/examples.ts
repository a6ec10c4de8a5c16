// The examples of docs/api/frontend.md, type-checked by `tsc --noEmit` (never run): a
// change to the package or the API that breaks them fails the check.
import { ConveyorError, createConveyor, idempotencyKey, unwrap } from "../../src/index.js";

declare function render(text: string): void;
declare function showBanner(text: string): void;
declare function setProgress(p: number | undefined, step: string | null | undefined): void;
declare function setBar(fraction: number): void;

export async function quickStart(otherId: string, file: Blob, abortController: AbortController) {
  const conveyor = createConveyor({ baseUrl: "https://api.example.com", apiKey: "cvk_…" });
  const task = await conveyor.tasks.submit({ kind: "copywriting", prompt: "Spring sale on green tea" });
  const sub = conveyor.live.task(task.id);
  sub.on("text", (text) => render(text));
  sub.on("reconnecting", ({ delayMs }) => showBanner(`reconnecting in ${delayMs} ms`));
  for await (const update of sub) {
    if (update.type === "event" && !update.transient) setProgress(update.progress, update.step);
  }
  const final = await conveyor.tasks.get(task.id);
  void final.files;
  await conveyor.tasks.cancel(otherId);
  try {
    await conveyor.tasks.submit({ kind: "video", prompt: "" });
  } catch (e) {
    if (e instanceof ConveyorError) console.log(e.status, e.code, e.detail.field);
  }
  const me = unwrap(await conveyor.api.GET("/v1/me"));
  void me.credits;
  const page = unwrap(await conveyor.api.GET("/v1/tasks", { params: { query: { status: "FAILED", limit: 50 } } }));
  void page.items;

  const withTickets = createConveyor({
    baseUrl: "https://api.example.com",
    live: { transport: "websocket", ticket: async () => (await fetch("/my-backend/conveyor-ticket")).text() },
  });
  void withTickets;

  const key = sessionStorage.getItem("draft-key") ?? idempotencyKey();
  await conveyor.tasks.submit({ kind: "image", prompt: "tea" }, { idempotencyKey: key });

  const upload = await conveyor.uploads.upload(file, {
    purpose: "video",
    onProgress: (sent, total) => setBar(sent / total),
    signal: abortController.signal,
  });
  await conveyor.tasks.submit({ kind: "video_analysis", prompt: "hooks", params: { upload_id: upload.id } });

  // The React example's subscription handling.
  const s = conveyor.live.task(task.id);
  s.on("snapshot", (snap) => void [snap.view.status, snap.view.progress]);
  s.on("event", (e) => void [e.status, e.progress]);
  const files = await s.finished
    .then(() => conveyor.tasks.get(task.id))
    .then((t) => t.files?.map((f) => f.url))
    .catch((e: Error & { code?: string }) => {
      if (e.name !== "AbortError") console.log(e.code ? `${e.code}: ${e.message}` : String(e));
    });
  void files;
  s.close();
}
