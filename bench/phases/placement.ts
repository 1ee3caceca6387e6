// Placement at scale: N GpuPods that leave the GPU type to the operator, first all pending (every offer they
// accept is full), then placed once room appears, then steady. Pending, they look for an offer every refresh
// of the account's offers, and the offers are one search per account per refresh, whatever N; placed, they
// cost no cloud call of their own.
import type { Manifest } from '../manifests.ts';
import { PLACED, placedGpuPod } from '../manifests.ts';
import { forEachConcurrently, sleep, until } from '../parallel.ts';
import { createResource, type Session } from '../session.ts';
import { delta, round } from '../stats.ts';
import type { ResourceWatch } from '../watch.ts';
import { classify, waitForQuiet } from './steady.ts';

/** How often the operator reads an account's offers again (src/resources/pricing/price-book.ts). */
const OFFER_REFRESH_SECONDS = 30;
/** Long enough for two refreshes whatever the phase of the first. */
const PENDING_WINDOW_SECONDS = 65;
const SEARCH = 'pods.searchGpus';

export interface PlacementResult {
  pods: number;
  /** Searches while every pod waited for an offer, over the window. */
  pendingSearches: number;
  pendingWindowSeconds: number;
  /** One per refresh that can start in the window. */
  searchBudget: number;
  /** From room appearing to every pod Ready. */
  placedSeconds: number;
  /** Cloud calls beyond state lists and budgeted details once every pod runs: should be 0. */
  steadyOtherCalls: number;
  steadySearches: number;
  steadyWindowSeconds: number;
}

export async function measurePlacement(
  session: Session,
  namespace: string,
  count: number,
  watch: ResourceWatch,
): Promise<PlacementResult> {
  const { stack, options, log } = session;
  const { gpuType, region } = PLACED;
  stack.sim.capacity.setTotal(region, gpuType, 0);
  const manifests: Manifest[] = Array.from({ length: count }, (_, index) =>
    placedGpuPod(`placed-${String(index).padStart(6, '0')}`),
  );
  await forEachConcurrently(manifests, options.concurrency, (manifest) =>
    createResource(stack.kube, namespace, manifest).then(() => undefined),
  );
  // Every pod has been looked at (and found no offer) once the operator is quiet again.
  await waitForQuiet(session, [watch], 120_000);
  log.info({ count }, 'placement: every pod pending; counting searches');
  const before = stack.sim.calls.snapshot().byOperation;
  await sleep(PENDING_WINDOW_SECONDS * 1000);
  const pendingSearches = delta(before, stack.sim.calls.snapshot().byOperation)[SEARCH] ?? 0;

  stack.sim.capacity.setTotal(region, gpuType, count);
  const roomAt = Date.now();
  const ready = () => manifests.filter((manifest) => watch.readyAt.has(manifest.name)).length;
  await until(
    () => ready() === count,
    'every placed pod Ready',
    120_000 + 50 * count,
    () => `(${ready()} Ready)`,
    500,
  );
  const placedSeconds = round((Date.now() - roomAt) / 1000, 2);
  await waitForQuiet(session, [watch], 180_000);
  const steady0 = stack.sim.calls.snapshot().byOperation;
  const began = Date.now();
  await sleep(options.steadySeconds * 1000);
  const steadyCalls = delta(steady0, stack.sim.calls.snapshot().byOperation);
  return {
    pods: count,
    pendingSearches,
    pendingWindowSeconds: PENDING_WINDOW_SECONDS,
    searchBudget: Math.floor(PENDING_WINDOW_SECONDS / OFFER_REFRESH_SECONDS) + 1,
    placedSeconds,
    steadyOtherCalls: classify(steadyCalls).other,
    steadySearches: steadyCalls[SEARCH] ?? 0,
    steadyWindowSeconds: round((Date.now() - began) / 1000),
  };
}
