import { sleep } from '../src/lib/delay.ts';
import type { Replica } from './operators.ts';
import type { Random } from './random.ts';

export interface Kills {
  kills: number;
  /** Kills that landed after the process had started its controllers, i.e. while it could be acting. */
  whileWorking: number;
}

/**
 * SIGKILLs the replica after random lifetimes and starts it again at once, until `until` has settled
 * (and at least `minimum` times). The instants are random within whatever the process is doing:
 * starting, creating, recording an id, deleting.
 */
export async function killRepeatedly(
  replica: Replica,
  random: Random,
  lifetimeMs: readonly [number, number],
  until: Promise<unknown>,
  minimum = 0,
): Promise<Kills> {
  let done = false;
  until.then(
    () => (done = true),
    () => (done = true),
  );
  const result: Kills = { kills: 0, whileWorking: 0 };
  // The last kill lands when the churn ends, so that convergence is measured from a restart.
  for (let last = false; !last; ) {
    await sleep(random.between(...lifetimeMs));
    last = done && result.kills + 1 >= minimum;
    const working = replica.output().includes('controller started');
    await replica.kill();
    result.kills += 1;
    if (working) result.whileWorking += 1;
    await replica.start();
  }
  return result;
}
