// From a change in the cloud (a pod breaks: the simulator's failPod) to the custom resource's status
// showing it.
import { forEachPaced, until } from '../parallel.ts';
import type { Session } from '../session.ts';
import { type Distribution, distribution } from '../stats.ts';
import type { ResourceWatch } from '../watch.ts';

/**
 * Fails the cloud pod of each named resource, four a second, and waits for every status to read FAILED.
 * `ids` maps resource names to cloud ids.
 */
export async function measureReaction(
  session: Session,
  watch: ResourceWatch,
  victims: readonly string[],
  ids: ReadonlyMap<string, string>,
): Promise<Distribution> {
  const failedAt = new Map<string, number>();
  await forEachPaced(victims, 4, async (name) => {
    const id = ids.get(name);
    if (id === undefined) throw new Error(`no cloud id known for ${name}`);
    failedAt.set(name, Date.now());
    if (!session.stack.sim.faults.failPod(id, 'FAILED'))
      throw new Error(`pod ${id} (${name}) was not running`);
  });
  const shown = (name: string) => watch.phase.get(name)?.phase === 'FAILED';
  await until(
    () => victims.every(shown),
    `${victims.length} resources to show FAILED`,
    60_000 + 3 * session.options.pollInterval * 1000,
  );
  return distribution(victims.map((name) => (watch.phase.get(name)?.since ?? 0) - (failedAt.get(name) ?? 0)));
}
