import type { RunningSimulator, SimState } from '../src/sim/index.ts';
import type { Cluster, TestObject } from '../test/support/operator.ts';
import { type CloudObject, cloudObjects, ownerOf } from './cloud-objects.ts';
import { readResources, resourceKey } from './kube.ts';
import type { Ledger, Tracked } from './ledger.ts';

/** One look at both sides: the custom resources in the apiserver and the objects in the cloud. */
export interface Observation {
  readonly at: number;
  /** Custom resources by `Kind/name`. */
  readonly resources: ReadonlyMap<string, TestObject>;
  readonly cloud: readonly CloudObject[];
  /** Cloud objects per resource uid. */
  readonly owned: ReadonlyMap<string, readonly CloudObject[]>;
  /** Cloud objects made for no resource the suite knows. */
  readonly ownerless: readonly CloudObject[];
}

export async function observe(
  cluster: Cluster,
  namespace: string,
  sim: RunningSimulator,
  ledger: Ledger,
): Promise<Observation> {
  const resources = await readResources(cluster, namespace);
  return observationOf(resources, sim.state.snapshot(), ledger);
}

/** Pairs the custom resources read (by `Kind/name`) with the cloud's state, through the ledger. */
export function observationOf(
  resources: ReadonlyMap<string, TestObject>,
  state: SimState,
  ledger: Ledger,
): Observation {
  const cloud = cloudObjects(state);
  const owned = new Map<string, CloudObject[]>();
  const ownerless: CloudObject[] = [];
  for (const object of cloud) {
    const owner = ownerOf(object, ledger);
    if (!owner) ownerless.push(object);
    else owned.set(owner.uid, [...(owned.get(owner.uid) ?? []), object]);
  }
  return { at: Date.now(), resources, cloud, owned, ownerless };
}

export function resourceOfTracked(observation: Observation, tracked: Tracked): TestObject | undefined {
  return observation.resources.get(resourceKey(tracked.kind, tracked.name));
}

export function liveOwned(observation: Observation, tracked: Tracked): CloudObject[] {
  return (observation.owned.get(tracked.uid) ?? []).filter((object) => object.live);
}
