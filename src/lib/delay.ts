/** Resolves after `ms`, or as soon as `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Whether `promise` settles within `ms`; it keeps running either way. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timeUp = new AbortController();
  const settled = promise.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, sleep(ms, timeUp.signal).then(() => false)]);
  } finally {
    timeUp.abort();
  }
}
