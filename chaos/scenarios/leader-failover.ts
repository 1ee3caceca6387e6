import { sleep } from '../../src/lib/delay.ts';
import { operations, planChurn } from '../driver.ts';
import type { Replica } from '../operators.ts';
import type { Random } from '../random.ts';
import { churnResult, round, type ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { parseLogLines } from '../transcripts.ts';
import { namespaceOf, Trial } from '../trial.ts';

/** Lease timings of the scenario, in seconds: a quick failover, still renewing comfortably on a busy machine. */
export const LEASE = { duration: 4, renewDeadline: 3, retryPeriod: 1 };

/** The flags that put replicas under leader election on lease `name` (in `namespace`), on LEASE's times. */
export function leaderElectionFlags(name: string, namespace?: string): string[] {
  return [
    '--leader-elect',
    'true',
    '--lease-name',
    name,
    ...(namespace === undefined ? [] : ['--lease-namespace', namespace]),
    '--lease-duration',
    String(LEASE.duration),
    '--renew-deadline',
    String(LEASE.renewDeadline),
    '--retry-period',
    String(LEASE.retryPeriod),
  ];
}
/** Failover target: the lease runs out, and the standby notices within one more retry period. */
const TAKEOVER_TARGET_MS = (LEASE.duration + LEASE.retryPeriod) * 1000;
/** A leader is killed after leading (and acting) for a random time in this range. */
const LEAD_FOR_MS: readonly [number, number] = [1_000, 4_000];
const LEADER_WAIT_MS = 60_000;
/** A frozen leader stays stopped past its lease, so that the standby takes over meanwhile. */
const FREEZE_MS = (LEASE.duration + 2) * 1000;
/** Once resumed, a deposed leader must notice and exit within this. */
const RESUMED_EXIT_MS = 30_000;

export interface Failover {
  readonly how: 'killed' | 'frozen';
  /** When the leader was killed or frozen. */
  readonly killedAt: number;
  /** When the next leader logged that it leads; before `killedAt` would mean two leaders at once. */
  readonly tookOverAt: number;
  /** A frozen leader: how long after it resumed it exited, having lost the lease; unset if it did not. */
  readonly resumedExitedAfterMs?: number | undefined;
}

/**
 * Scenario 4. Two operator processes with leader election; the leader is SIGKILLed again and again
 * (and started again, as a Deployment would) while resources churn. The standby must take over within
 * the lease duration plus one retry period, and there must never be two leaders: no duplicate create.
 * Some disruptions freeze the leader instead (SIGSTOP past its lease, then SIGCONT): it resumes with
 * work in flight while the standby leads, and must change nothing in the cloud before it exits.
 */
export async function leaderFailover(run: RunContext): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const shape = run.profile.failover;
  const random = run.random.fork('failover');
  const namespace = namespaceOf('failover');
  const trial = await Trial.open(run, {
    label: 'failover',
    replicas: 2,
    flags: leaderElectionFlags('chaos-failover', namespace),
  });
  try {
    await trial.startOperators();
    const churn = trial.drive(planChurn(random.fork('plan'), shape));
    const [stats, failovers] = await Promise.all([
      churn,
      disruptLeaders(trial.replicas, random.fork('kills'), shape.leaderKills, shape.leaderFreezes),
    ]);
    const settled = await trial.settle();
    const takeovers = failovers.map(({ killedAt, tookOverAt }) => tookOverAt - killedAt);
    const worst = Math.max(0, ...takeovers);
    const overlaps = takeovers.filter((ms) => ms < 0).length;
    const frozen = failovers.filter((failover) => failover.how === 'frozen');
    const stayed = frozen.filter((failover) => failover.resumedExitedAfterMs === undefined).length;
    const fenced = trial.replicas
      .flatMap((replica) => replica.history())
      .flatMap((output) => parseLogLines(output))
      .filter((line) => String(line.msg).startsWith('not changing any')).length;
    const lostLeases = trial.replicas
      .flatMap((replica) => replica.ended)
      .filter((e) => e.cause === 'lost-leadership');
    return churnResult({
      scenario: 'leader-failover',
      startedAt,
      ops: operations(stats),
      kills: failovers.length - frozen.length,
      ...settled,
      crashes: trial.crashes,
      apiCalls: trial.sim.calls.snapshot().total,
      figures: {
        worstTakeoverS: round(worst / 1000),
        medianTakeoverS: round(median(takeovers) / 1000),
        targetS: TAKEOVER_TARGET_MS / 1000,
        leaseS: LEASE.duration,
        retryPeriodS: LEASE.retryPeriod,
        lostLeases: lostLeases.length,
        freezes: frozen.length,
        worstResumedExitS: round(Math.max(0, ...frozen.map((f) => f.resumedExitedAfterMs ?? 0)) / 1000),
        fencedChanges: fenced,
      },
      violations: [
        ...(overlaps > 0 ? [`${overlaps} takeover(s) before the old leader was dead: two leaders`] : []),
        ...(stayed > 0 ? [`${stayed} resumed leader(s) kept running after a successor took over`] : []),
      ],
      missedTargets:
        worst > TAKEOVER_TARGET_MS
          ? [`a takeover took ${round(worst / 1000)} s (target ${TAKEOVER_TARGET_MS / 1000} s)`]
          : [],
    });
  } finally {
    await trial.close();
  }
}

/**
 * Disrupts the leader `kills + freezes` times, each after it led for a while, freezes spread among the
 * kills, and times each takeover.
 */
async function disruptLeaders(
  replicas: readonly Replica[],
  random: Random,
  kills: number,
  freezes: number,
): Promise<Failover[]> {
  const failovers: Failover[] = [];
  const total = kills + freezes;
  const freezeEvery = freezes > 0 ? Math.ceil(total / freezes) : Number.POSITIVE_INFINITY;
  for (let turn = 0; turn < total; turn += 1) {
    await awaitLeader(replicas);
    await sleep(random.between(...LEAD_FOR_MS));
    const [leader] = await awaitLeader(replicas);
    if (!leader) throw new Error('the leader vanished');
    // Every `freezeEvery`-th turn from the first: at most `freezes` of them, as freezeEvery ≥ total / freezes.
    const frozen = turn % freezeEvery === 0;
    failovers.push(
      frozen ? await freezeLeader(replicas, leader.replica) : await killLeader(replicas, leader.replica),
    );
  }
  return failovers;
}

/** SIGKILLs the leader, starts it again (as a Deployment would), and waits for the next leader. */
export async function killLeader(replicas: readonly Replica[], leader: Replica): Promise<Failover> {
  const killedAt = Date.now();
  await leader.kill();
  await leader.start();
  const [next] = await awaitLeader(replicas);
  return { how: 'killed', killedAt, tookOverAt: next?.since ?? Number.NaN };
}

/** Freezes the leader until the standby has taken over, resumes it, and waits for it to give up. */
async function freezeLeader(replicas: readonly Replica[], leader: Replica): Promise<Failover> {
  const killedAt = Date.now();
  const ended = leader.ended.length;
  const thawed = leader.freeze(FREEZE_MS);
  const [next] = await awaitLeader(replicas, leader);
  await thawed;
  const resumedAt = Date.now();
  const deadline = resumedAt + RESUMED_EXIT_MS;
  while (leader.ended.length === ended && Date.now() < deadline) await sleep(50);
  const exitedAt = leader.ended[ended]?.at;
  return {
    how: 'frozen',
    killedAt,
    tookOverAt: next?.since ?? Number.NaN,
    resumedExitedAfterMs: exitedAt === undefined ? undefined : exitedAt - resumedAt,
  };
}

/**
 * The replicas whose running process says it became leader, and when it said so; waits until there is
 * one. A process that loses the lease exits, so a running process that became leader still leads: two
 * of them at once would be two leaders. `except` is a frozen one, which cannot know yet that it lost.
 */
export async function awaitLeader(
  replicas: readonly Replica[],
  except?: Replica,
): Promise<Array<{ replica: Replica; since: number }>> {
  const deadline = Date.now() + LEADER_WAIT_MS;
  while (Date.now() < deadline) {
    const leading = replicas.flatMap((replica) => {
      if (replica === except) return [];
      const became = parseLogLines(replica.output()).find((line) => line.msg === 'became leader');
      return became ? [{ replica, since: became.time }] : [];
    });
    if (leading.length > 0) return leading.sort((a, b) => a.since - b.since);
    await sleep(50);
  }
  throw new Error(`no operator process became leader within ${LEADER_WAIT_MS / 1000} s`);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
