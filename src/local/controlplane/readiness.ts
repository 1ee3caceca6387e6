import { setTimeout as delay } from 'node:timers/promises';
import type { ServerProcess } from './server-process.ts';

const POLL_INTERVAL_MS = 100;

/** `true` when ready, otherwise why not (shown if the wait times out). */
export type Probe = () => Promise<true | string>;

/** Polls `probe` until the server is ready; fails with the server's log if it exits or the time runs out. */
export async function waitUntilReady(server: ServerProcess, probe: Probe, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const exited = server.exited.then((how) => ({ exited: how }));
  for (;;) {
    const outcome = await Promise.race([probe().catch((error: unknown) => String(error)), exited]);
    if (outcome === true) return;
    if (typeof outcome === 'object') throw await server.failure(`${outcome.exited} while starting`);
    if (Date.now() >= deadline) {
      throw await server.failure(`was not ready within ${timeoutMs / 1000}s (last check: ${outcome})`);
    }
    await delay(POLL_INTERVAL_MS);
  }
}
