/** The `error` object of every conveyor error answer (`{"error": {...}}`). */
export interface ErrorDetail {
  /** Machine-readable: `invalid_field`, `unauthorized`, `insufficient_credits`, `rate_limited`, … */
  code: string;
  message: string;
  /** The request field at fault, when there is one. */
  field?: string | null;
  [extra: string]: unknown;
}

/**
 * An answer of the API that is not a success, with the API's error code. `retryAfterMs`
 * is set from `Retry-After` on 429 and 503 (the client has already waited and retried
 * as often as it was allowed to when this reaches you).
 */
export class ConveyorError extends Error {
  override readonly name = "ConveyorError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly detail: ErrorDetail,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }

  /** Reads an error answer; a body that is not conveyor's error JSON still gives a code. */
  static async from(res: Response): Promise<ConveyorError> {
    // Not JSON (a proxy's page): the status speaks for it.
    return ConveyorError.fromBody(res, await res.json().catch(() => undefined));
  }

  /** From an error body already parsed (openapi-fetch's `error`). */
  static fromBody(res: Response, body: unknown): ConveyorError {
    const error = (body as { error?: ErrorDetail } | undefined)?.error;
    const detail: ErrorDetail =
      error && typeof error.code === "string"
        ? error
        : { code: `http_${res.status}`, message: res.statusText || `HTTP ${res.status}` };
    return new ConveyorError(res.status, detail.code, detail.message, detail, retryAfterMs(res));
  }
}

/** `Retry-After` in milliseconds (seconds or an HTTP date), if the answer has one. */
export function retryAfterMs(res: Response): number | undefined {
  const value = res.headers.get("retry-after");
  if (value === null) return undefined;
  const secs = Number(value);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
