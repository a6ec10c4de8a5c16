/** What a live stream delivers, from the WebSocket or the SSE fallback alike. */

/** The thing as it stands when a subscription starts (for a task: `GET /v1/tasks/{id}`'s view). */
export interface SnapshotUpdate<View = Record<string, unknown>> {
  type: "snapshot";
  stream: string;
  id: string;
  seq: number;
  view: View;
}

/**
 * One event of the thing. Stored events have a `seq` one above the previous; a
 * `transient` one (a waiting task's place in `line`) is computed and repeats the last
 * stored `seq`. Pieces of streamed text have `kind: "delta"` (append `delta`) or
 * `kind: "reset"` (a retried attempt follows: discard the text so far); progress events
 * carry `status`, `progress`, `step`, `message`.
 */
export interface EventUpdate {
  type: "event";
  stream: string;
  id: string;
  seq: number;
  transient?: boolean;
  status?: string;
  progress?: number;
  step?: string | null;
  message?: string | null;
  kind?: "delta" | "reset";
  delta?: string;
  at?: string;
  line?: Record<string, unknown>;
  [field: string]: unknown;
}

export type LiveUpdate<View = Record<string, unknown>> = SnapshotUpdate<View> | EventUpdate;

/** A server frame of the WebSocket protocol (docs/api/live.md). */
export type ServerFrame =
  | ({ type: "snapshot"; stream: string; id: string; seq: number } & Record<string, unknown>)
  | ({ type: "event" } & EventUpdate)
  | { type: "unsubscribed"; stream?: string; id?: string; all?: boolean; reason: string }
  | { type: "error"; code: string; message: string; stream?: string; id?: string };

/** A WebSocket snapshot frame keeps the view under the stream's name (`task`, `order`). */
export function snapshotOf<View>(frame: Record<string, unknown>): SnapshotUpdate<View> {
  const stream = String(frame.stream);
  return {
    type: "snapshot",
    stream,
    id: String(frame.id),
    seq: Number(frame.seq),
    view: frame[stream] as View,
  };
}
