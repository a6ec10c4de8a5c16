/** One Server-Sent Event. */
export interface SseMessage {
  event: string;
  data: string;
  id?: string;
}

/**
 * Reads a `text/event-stream` body (the WHATWG rules: `event`, `data`, `id` fields, a
 * blank line ends an event, `:` starts a comment) and calls `onMessage` per event. Resolves
 * when the body ends. fetch-based rather than `EventSource`, which cannot send an
 * `Authorization` header.
 */
export async function readSse(
  body: ReadableStream<Uint8Array>,
  onMessage: (m: SseMessage) => void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | undefined;
  const line = (l: string) => {
    if (l === "") {
      if (data.length > 0) onMessage({ event: event || "message", data: data.join("\n"), ...(id !== undefined ? { id } : {}) });
      event = "";
      data = [];
      id = undefined;
      return;
    }
    if (l.startsWith(":")) return;
    const colon = l.indexOf(":");
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? "" : l.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let at: number;
    while ((at = buffer.search(/\r\n|\r|\n/)) >= 0) {
      // A lone `\r` at the end may be half of a `\r\n` split across chunks.
      if (buffer[at] === "\r" && at === buffer.length - 1) break;
      const sep = buffer[at] === "\r" && buffer[at + 1] === "\n" ? 2 : 1;
      line(buffer.slice(0, at));
      buffer = buffer.slice(at + sep);
    }
  }
}
