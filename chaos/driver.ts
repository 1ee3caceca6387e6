import { sleep } from '../src/lib/delay.ts';
import { isStatus } from '../src/kube/client.ts';
import type { Cluster, TestObject } from '../test/support/operator.ts';
import { persistently } from './kube.ts';
import type { Ledger, Tracked } from './ledger.ts';
import type { Random } from './random.ts';
import {
  KIND_NAMES,
  type KindName,
  manifest,
  placedSpec,
  refusedSpec,
  resourceName,
  resourceOf,
  type Spec,
  specChange,
  validSpec,
} from './workload.ts';

/** What the suite does to one custom resource over a scenario, in ms from the start of the churn. */
export interface Life {
  readonly kind: KindName;
  readonly name: string;
  readonly spec: Spec;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly createAt: number;
  readonly changes: ReadonlyArray<{ readonly at: number; readonly patch: Spec }>;
  readonly deleteAt?: number | undefined;
  /** The cloud refuses this spec (see `Tracked.rejected`). */
  readonly rejected?: boolean;
}

export interface ChurnShape {
  /** Resources made, spread evenly over the three kinds. */
  readonly resources: number;
  /** Creates happen at random instants within this window. */
  readonly spreadMs: number;
  /** Share of resources deleted again, some time within `lifetimeMs` after their create. */
  readonly deleteShare: number;
  /** Share of resources whose spec changes once while they live. */
  readonly changeShare: number;
  readonly lifetimeMs: readonly [number, number];
  /** Numbers the resources from here, so several churns in one namespace do not collide. */
  readonly firstIndex?: number;
}

/** A random churn of creates, spec changes and deletes of every kind. */
export function planChurn(random: Random, shape: ChurnShape): Life[] {
  return Array.from({ length: shape.resources }, (_, index) => {
    const kind = KIND_NAMES[index % KIND_NAMES.length] as KindName;
    const name = resourceName(kind, (shape.firstIndex ?? 0) + index);
    const spec = validSpec(kind, random);
    const createAt = random.between(0, shape.spreadMs);
    const lifetime = random.between(...shape.lifetimeMs);
    const deleteAt = random.chance(shape.deleteShare) ? createAt + lifetime : undefined;
    const changes = random.chance(shape.changeShare)
      ? [{ at: createAt + lifetime * random.between(0.2, 0.8), patch: specChange(kind, name, spec, random) }]
      : [];
    return { kind, name, spec, createAt, changes, deleteAt };
  });
}

/** One resource of each kind whose spec the cloud refuses, created at random within `spreadMs`. */
export function planRefused(random: Random, spreadMs: number): Life[] {
  return KIND_NAMES.map((kind) => ({
    kind,
    name: `${resourceName(kind, 0)}-refused`,
    spec: refusedSpec(kind),
    createAt: random.between(0, spreadMs),
    changes: [],
    rejected: true,
  }));
}

/**
 * A spot GpuPod with recoveryPolicy Recreate, created in the first half of `spreadMs` and never deleted or
 * changed: a preemption at the end of a run always has one object to replace, whatever else was drawn.
 */
export function planSpotRecovery(random: Random, spreadMs: number): Life {
  return {
    kind: 'GpuPod',
    name: `${resourceName('GpuPod', 0)}-spot`,
    spec: { ...validSpec('GpuPod', random), isSpot: true, recoveryPolicy: 'Recreate', paused: false },
    createAt: random.between(0, spreadMs / 2),
    changes: [],
  };
}

/**
 * GpuPods that leave the GPU type to the operator: the cheapest on-demand offer they accept is a pool of one
 * GPU (`PLACED_POOL`), so creates made while the operator's offers still show it free are refused for lack
 * of room and move to the next offer; the last prefers spot and recovers from preemption by placing again.
 */
export function planPlaced(random: Random, spreadMs: number, count = 4): Life[] {
  return Array.from({ length: count }, (_, index) => ({
    kind: 'GpuPod' as const,
    name: `${resourceName('GpuPod', index)}-placed`,
    spec: placedSpec(index === count - 1),
    createAt: random.between(0, spreadMs / 2),
    changes: [],
  }));
}

export interface DriveStats {
  creates: number;
  changes: number;
  deletes: number;
}

/** Operations the suite performed; what every scenario reports as `ops`. */
export function operations(stats: DriveStats): number {
  return stats.creates + stats.changes + stats.deletes;
}

/**
 * Plays `lives` against the apiserver in real time, each resource on its own timeline, recording every
 * accepted write in the ledger. Writes are retried while the apiserver is away.
 */
export async function drive(
  cluster: Cluster,
  namespace: string,
  ledger: Ledger,
  lives: readonly Life[],
): Promise<DriveStats> {
  const stats: DriveStats = { creates: 0, changes: 0, deletes: 0 };
  const start = Date.now();
  const at = (offset: number) => sleep(Math.max(0, start + offset - Date.now()));
  await Promise.all(
    lives.map(async (life) => {
      await at(life.createAt);
      const tracked = await createResource(cluster, namespace, ledger, life);
      stats.creates += 1;
      for (const change of life.changes) {
        await at(change.at);
        await changeResource(cluster, namespace, ledger, tracked, change.patch);
        stats.changes += 1;
      }
      if (life.deleteAt === undefined) return;
      await at(life.deleteAt);
      await deleteResource(cluster, namespace, ledger, tracked);
      stats.deletes += 1;
    }),
  );
  return stats;
}

/** Creates the resource of `life` now (its timeline aside) and tracks it. */
export async function createResource(
  cluster: Cluster,
  namespace: string,
  ledger: Ledger,
  life: Life,
): Promise<Tracked> {
  return ledger.created(life.kind, life.name, await create(cluster, namespace, life), life.rejected);
}

/** Applies a merge patch to the resource's spec and records the new generation. */
export async function changeResource(
  cluster: Cluster,
  namespace: string,
  ledger: Ledger,
  tracked: Tracked,
  patch: Spec,
): Promise<void> {
  const patched = await persistently(`change ${tracked.kind} ${tracked.name}`, () =>
    cluster.patch(resourceOf(tracked.kind), namespace, tracked.name, { spec: patch }),
  );
  ledger.changed(tracked, patched);
}

export async function deleteResource(
  cluster: Cluster,
  namespace: string,
  ledger: Ledger,
  tracked: Tracked,
): Promise<void> {
  await remove(cluster, namespace, tracked.kind, tracked.name);
  ledger.deleted(tracked);
}

async function create(cluster: Cluster, namespace: string, life: Life): Promise<TestObject> {
  const resource = resourceOf(life.kind);
  const body = manifest(life.kind, life.name, life.spec, { ...life.annotations });
  try {
    return await persistently(`create ${life.kind} ${life.name}`, () =>
      cluster.create(resource, namespace, body),
    );
  } catch (error) {
    // A retried create whose first attempt landed: the resource is there, which is what was wanted.
    const existing = isStatus(error, 409) ? await cluster.get(resource, namespace, life.name) : undefined;
    if (existing) return existing;
    throw error;
  }
}

/** Deletes a resource; one that is already gone counts as deleted. */
export async function remove(
  cluster: Cluster,
  namespace: string,
  kind: KindName,
  name: string,
): Promise<void> {
  try {
    await persistently(`delete ${kind} ${name}`, () => cluster.delete(resourceOf(kind), namespace, name));
  } catch (error) {
    if (!isStatus(error, 404)) throw error;
  }
}
