/** How long to wait before reconnecting or retrying. */
export interface Backoff {
  /** The first wait's ceiling (ms). Default 500. */
  initialMs?: number;
  /** No wait is longer (ms). Default 15,000. */
  maxMs?: number;
  /** Growth per attempt. Default 2. */
  factor?: number;
}

/**
 * The wait before attempt `n` (0-based): "full jitter", a random time up to an
 * exponentially growing ceiling, so clients dropped together (a server restart) do not
 * come back together.
 */
export function delayFor(n: number, b: Backoff = {}, random: () => number = Math.random): number {
  const initial = b.initialMs ?? 500;
  const max = b.maxMs ?? 15_000;
  const ceiling = Math.min(max, initial * (b.factor ?? 2) ** n);
  return Math.round(random() * ceiling);
}

/** Resolves after `ms`, or rejects with the signal's reason when it is aborted. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
