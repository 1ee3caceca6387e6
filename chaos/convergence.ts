import { sleep } from '../src/lib/delay.ts';
import { condition, type TestObject } from '../test/support/operator.ts';
import type { CloudObject } from './cloud-objects.ts';
import type { Ledger, Tracked } from './ledger.ts';
import { liveOwned, type Observation, resourceOfTracked } from './observation.ts';
import { cloudNameOf, type Spec } from './workload.ts';

/** Synced reasons of failures that retrying cannot fix (see src/managed/core/errors.ts). */
const TERMINAL_REASONS = new Set([
  'CloudRejected',
  'CloudRequestInvalid',
  'InvalidSpec',
  'ExternalResourceNotFound',
  'PermissionDenied',
]);

/** The cloud reports the object broken: the operator shows it but cannot undo it. */
const BROKEN = new Set(['FAILED', 'DEGRADED']);

/**
 * Why `tracked` is not converged, or `undefined` when it is. Converged means:
 * - a deleted resource is gone from the apiserver (no finalizer left) and no cloud object of it is live;
 * - a resource the cloud refuses shows a terminal `Synced=False` for its current generation, and
 *   nothing live was made for it;
 * - any other resource has exactly one live cloud object, `status.id` names it, `status.phase` equals
 *   its cloud status, `status.observedGeneration` equals `metadata.generation`, `Synced=True`, and the
 *   cloud object is in the state the spec asks for (running or paused, stopped, scaled, named) unless
 *   the cloud reports it FAILED or DEGRADED.
 */
export function convergenceProblem(tracked: Tracked, observation: Observation): string | undefined {
  const resource = resourceOfTracked(observation, tracked);
  const live = liveOwned(observation, tracked);
  if (tracked.deleted) {
    if (resource) return resource.metadata.deletionTimestamp ? 'finalizer still there' : 'deletion not seen';
    return live.length === 0 ? undefined : `deleted, yet ${live.length} cloud object(s) live`;
  }
  if (!resource) return 'missing from the apiserver';
  const { generation } = resource.metadata;
  if (resource.status?.observedGeneration !== generation) {
    return `observedGeneration ${resource.status?.observedGeneration} != generation ${generation}`;
  }
  const synced = condition(resource, 'Synced');
  if (tracked.rejected) {
    if (synced?.status !== 'False' || !TERMINAL_REASONS.has(synced.reason)) {
      return `expected a terminal Synced=False, got ${describeCondition(resource)}`;
    }
    return live.length === 0 ? undefined : `refused by the cloud, yet ${live.length} cloud object(s) live`;
  }
  if (synced?.status !== 'True') return `Synced is ${describeCondition(resource)}`;
  const [cloud, ...others] = live;
  if (!cloud || others.length > 0) return `${live.length} live cloud objects, expected exactly one`;
  if (resource.status?.id !== cloud.id) return `status.id ${resource.status?.id} is not ${cloud.id}`;
  if (resource.status?.phase !== cloud.status) {
    return `status.phase ${resource.status?.phase}, the cloud says ${cloud.status}`;
  }
  if (resource.spec?.recoveryPolicy === 'Recreate' && cloud.status === 'FAILED') {
    return 'preempted with recoveryPolicy Recreate, not replaced';
  }
  return BROKEN.has(cloud.status) ? undefined : desiredStateProblem(tracked, resource.spec ?? {}, cloud);
}

function desiredStateProblem(tracked: Tracked, spec: Spec, cloud: CloudObject): string | undefined {
  switch (tracked.kind) {
    case 'GpuPod': {
      const wanted = spec.paused === true ? 'PAUSED' : 'RUNNING';
      return cloud.status === wanted
        ? undefined
        : `the cloud pod is ${cloud.status}, the spec wants ${wanted}`;
    }
    case 'GpuVm': {
      if (cloud.status !== 'RUNNING') return `the VM is ${cloud.status}`;
      const wanted = cloudNameOf(tracked.name, spec);
      return cloud.name === wanted ? undefined : `the VM is named ${cloud.name}, the spec wants ${wanted}`;
    }
    case 'ServerlessEndpoint': {
      const wanted = spec.stopped === true ? 'STOPPED' : 'RUNNING';
      if (cloud.status !== wanted) return `the endpoint is ${cloud.status}, the spec wants ${wanted}`;
      return cloud.totalWorkers === spec.workers
        ? undefined
        : `the endpoint has ${cloud.totalWorkers} workers, the spec wants ${spec.workers}`;
    }
  }
}

function describeCondition(resource: TestObject): string {
  const synced = condition(resource, 'Synced');
  return synced ? `${synced.status} (${synced.reason}: ${synced.message})` : 'absent';
}

/** Marks every resource that is converged now and was not yet since its last change. */
export function noteConverged(ledger: Ledger, observation: Observation): void {
  for (const tracked of ledger.all()) {
    if (tracked.convergedAt === undefined && convergenceProblem(tracked, observation) === undefined) {
      ledger.converged(tracked, observation.at);
    }
  }
}

export interface Convergence {
  readonly converged: boolean;
  /** From the call until everything was converged (or the deadline). */
  readonly ms: number;
  readonly unconverged: number;
  /** `Kind/name: problem`, for the first few resources that did not converge. */
  readonly problems: readonly string[];
}

const SHOWN_PROBLEMS = 8;

/** Polls until every resource of the ledger is converged at one instant, or `timeoutMs` passes. */
export function awaitConvergence(
  ledger: Ledger,
  look: () => Promise<Observation>,
  timeoutMs: number,
): Promise<Convergence> {
  return awaitNoProblems(async () => {
    const observation = await look();
    noteConverged(ledger, observation);
    return ledger
      .all()
      .map((tracked) => [tracked, convergenceProblem(tracked, observation)] as const)
      .filter(([, problem]) => problem !== undefined)
      .map(([tracked, problem]) => `${tracked.kind}/${tracked.name}: ${problem}`);
  }, timeoutMs);
}

/** Polls `problems` (one line per thing not where it should be) until it finds none, or `timeoutMs` passes. */
export async function awaitNoProblems(
  problems: () => Promise<readonly string[]>,
  timeoutMs: number,
): Promise<Convergence> {
  const start = Date.now();
  for (;;) {
    const found = await problems();
    const ms = Date.now() - start;
    if (found.length === 0 || ms > timeoutMs) {
      return {
        converged: found.length === 0,
        ms,
        unconverged: found.length,
        problems: found.slice(0, SHOWN_PROBLEMS),
      };
    }
    await sleep(500);
  }
}
