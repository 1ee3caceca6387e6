import { sleep } from '../../src/runtime/delay.ts';
import { operations, planChurn } from '../driver.ts';
import type { Replica } from '../operators.ts';
import type { Random } from '../random.ts';
import { churnResult, round, type ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { parseLogLines } from '../transcripts.ts';
import { namespaceOf, Trial } from '../trial.ts';

/** Lease timings of the scenario, in seconds: a quick failover, still renewing comfortably on a busy machine. */
const LEASE = { duration: 4, renewDeadline: 3, retryPeriod: 1 };
/** Failover target: the lease runs out, and the standby notices within one more retry period. */
const TAKEOVER_TARGET_MS = (LEASE.duration + LEASE.retryPeriod) * 1000;
/** A leader is killed after leading (and acting) for a random time in this range. */
const LEAD_FOR_MS: readonly [number, number] = [1_000, 4_000];
const LEADER_WAIT_MS = 60_000;

interface Failover {
  readonly killedAt: number;
  /** When the next leader logged that it leads; before `killedAt` would mean two leaders at once. */
  readonly tookOverAt: number;
}

/**
 * Scenario 4. Two operator processes with leader election; the leader is SIGKILLed again and again
 * (and started again, as a Deployment would) while resources churn. The standby must take over within
 * the lease duration plus one retry period, and there must never be two leaders: no duplicate create.
 */
export async function leaderFailover(run: RunContext): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const shape = run.profile.failover;
  const random = run.random.fork('failover');
  const namespace = namespaceOf('failover');
  const trial = await Trial.open(run, {
    label: 'failover',
    replicas: 2,
    flags: [
      '--leader-elect',
      'true',
      '--lease-name',
      'chaos-failover',
      '--lease-namespace',
      namespace,
      '--lease-duration',
      String(LEASE.duration),
      '--renew-deadline',
      String(LEASE.renewDeadline),
      '--retry-period',
      String(LEASE.retryPeriod),
    ],
  });
  try {
    await trial.startOperators();
    const churn = trial.drive(planChurn(random.fork('plan'), shape));
    const [stats, failovers] = await Promise.all([
      churn,
      killLeaders(trial.replicas, random.fork('kills'), shape.leaderKills),
    ]);
    const settled = await trial.settle();
    const takeovers = failovers.map(({ killedAt, tookOverAt }) => tookOverAt - killedAt);
    const worst = Math.max(0, ...takeovers);
    const overlaps = takeovers.filter((ms) => ms < 0).length;
    const lostLeases = trial.replicas
      .flatMap((replica) => replica.ended)
      .filter((e) => e.cause === 'lost-leadership');
    return churnResult({
      scenario: 'leader-failover',
      startedAt,
      ops: operations(stats),
      kills: failovers.length,
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
      },
      violations: overlaps > 0 ? [`${overlaps} takeover(s) before the old leader was dead: two leaders`] : [],
      missedTargets:
        worst > TAKEOVER_TARGET_MS
          ? [`a takeover took ${round(worst / 1000)} s (target ${TAKEOVER_TARGET_MS / 1000} s)`]
          : [],
    });
  } finally {
    await trial.close();
  }
}

/** Kills the leader `count` times, each after it led for a while, and times each takeover. */
async function killLeaders(replicas: readonly Replica[], random: Random, count: number): Promise<Failover[]> {
  const failovers: Failover[] = [];
  for (let kill = 0; kill < count; kill += 1) {
    await awaitLeader(replicas);
    await sleep(random.between(...LEAD_FOR_MS));
    const [leader] = await awaitLeader(replicas);
    if (!leader) throw new Error('the leader vanished');
    const killedAt = Date.now();
    await leader.replica.kill();
    await leader.replica.start();
    const [next] = await awaitLeader(replicas);
    if (next) failovers.push({ killedAt, tookOverAt: next.since });
  }
  return failovers;
}

/**
 * The replicas whose running process says it became leader, and when it said so; waits until there is
 * one. A process that loses the lease exits, so a running process that became leader still leads: two
 * of them at once would be two leaders.
 */
async function awaitLeader(
  replicas: readonly Replica[],
): Promise<Array<{ replica: Replica; since: number }>> {
  const deadline = Date.now() + LEADER_WAIT_MS;
  while (Date.now() < deadline) {
    const leading = replicas.flatMap((replica) => {
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
