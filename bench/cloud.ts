import type { Session } from './session.ts';

export interface CloudPod {
  name: string;
  id: string;
  /** When the cloud created it (epoch ms, the simulator's clock: this process's). */
  createdAt: number;
}

/** Every pod in the cloud (one list call, made by the benchmark). */
export async function listPods(session: Session): Promise<CloudPod[]> {
  const pods = await session.stack.cloud.pods.list();
  return pods.map(({ name, id, createdAt }) => ({ name, id, createdAt }));
}

const LIVE = (status: string) => status !== 'TERMINATED';

/** How many cloud resources named in `names` are not deleted yet. */
export function liveCloudResources(session: Session, names: ReadonlySet<string>): number {
  const state = session.stack.sim.state.snapshot();
  const live = [...state.pods, ...state.vms, ...state.endpoints].filter(
    (resource) => names.has(resource.name) && LIVE(resource.status),
  );
  return live.length;
}
