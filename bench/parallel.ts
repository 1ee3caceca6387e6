/** Runs `work` on every item with at most `concurrency` in flight; rejects with the first failure. */
export async function forEachConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** Starts `work` on each item at a steady `perSecond` rate (without waiting for the previous one). */
export async function forEachPaced<T>(
  items: readonly T[],
  perSecond: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  const started: Promise<void>[] = [];
  const begin = performance.now();
  for (const [index, item] of items.entries()) {
    const due = begin + (index * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    started.push(work(item, index));
  }
  await Promise.all(started);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` every `everyMs` until it holds; throws `what` (with the last detail) after `timeoutMs`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number,
  detail: () => string = () => '',
  everyMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} ${detail()}`);
    await sleep(everyMs);
  }
}
