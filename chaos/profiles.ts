import type { ChurnShape } from './driver.ts';

/** How much each scenario does: `short` runs inside `npm test`, `full` is `npm run chaos`. */
export interface Profile {
  readonly name: 'short' | 'full';
  readonly crashes: ChurnShape & {
    /** The operator is SIGKILLed after a random lifetime in this range, then started again. */
    readonly killAfterMs: readonly [number, number];
  };
  readonly faults: ChurnShape;
  readonly watch: {
    readonly resources: number;
    /** Disruptions in a row, alternately a cut of every connection and an apiserver restart. */
    readonly disruptions: number;
    /** Spec changes, creates and deletes made during each disruption. */
    readonly changesPerDisruption: number;
    readonly apiserverDownMs: readonly [number, number];
  };
  readonly failover: ChurnShape & {
    readonly leaderKills: number;
    /** Of the disruptions, this many freeze the leader (SIGSTOP past its lease) instead of killing it. */
    readonly leaderFreezes: number;
  };
  readonly badInput: {
    /** How long the operator is watched working on resources it can never converge. */
    readonly observeMs: number;
  };
  readonly secrets: { readonly resources: number; readonly kills: number };
  /** ServerlessTasks submitted over `spreadMs` while the operator is killed after lifetimes in `killAfterMs`. */
  readonly tasks: {
    readonly tasks: number;
    readonly spreadMs: number;
    readonly killAfterMs: readonly [number, number];
  };
  /**
   * Budgets, deadlines and idle stops under kills (stage 1: a lone operator SIGKILLed after lifetimes in
   * `killAfterMs`) and leader failovers (stage 2: two replicas, the leader killed `leaderKills` times at
   * least). See `scenarios/spend-controls.ts`.
   */
  readonly spend: {
    /** One-GPU pods applied at once against the budget account. */
    readonly burst: number;
    /** How many of them the account-wide budget fits: its maxSpendPerHour is this × the offer's price. */
    readonly fits: number;
    /** Running pods of the burst deleted in stage 2: exactly as many refused ones must take their place. */
    readonly freed: number;
    /** Pods with a deadline made in each stage, half `deadlineAction: Pause`, half `Delete`. */
    readonly deadlinePods: number;
    /** Their `activeDeadlineSeconds`, drawn from this range. */
    readonly deadlineSeconds: readonly [number, number];
    /** Deadline and idle pods are created at random instants within this window of their stage's start. */
    readonly spreadMs: number;
    readonly killAfterMs: readonly [number, number];
    readonly leaderKills: number;
    /**
     * Kills (stage 1) and failovers (stage 2) go on until the cloud is where it should be, or this long at
     * most; then the stage settles undisturbed (bounds a short run whatever the draws).
     */
    readonly killForMs: number;
    readonly failoverForMs: number;
    /**
     * Pods with `idleStop` (5 minutes, the shortest window the CRD allows), half with their GPUs idle in the
     * simulator and half busy. `expectPause`: the scenario lasts past the window and the idle ones must be
     * paused, exactly once, and stay paused across the failovers that follow. Without it (short) the
     * window cannot pass — the operator reads its own clock and the Ready condition's time, which the
     * suite cannot move — so the idle ones, younger than the window, must never be paused.
     */
    readonly idle: { readonly pods: number; readonly expectPause: boolean };
    /** Latency of the simulator's pod creates: a burst's checks all run before any create is answered. */
    readonly createLatencyMs: number;
    /** Once everything settled, the scenario watches this long that nothing changes any more. */
    readonly quietMs: number;
  };
  /**
   * Deployments on a virtual node (see `scenarios/virtual-node.ts`): every other one tolerates the node
   * unreachable 2 s (its Pods are evicted by the outage), the others ride it out.
   */
  readonly virtualNode: {
    readonly deployments: number;
    /** Each Deployment's replicas, at the start and after each scale. */
    readonly replicas: readonly [number, number];
    /** Changes (a scale or a rollout), each followed by a SIGKILL of the leader; the one outage comes among them. */
    readonly disruptions: number;
  };
  /** Bound on every wait for convergence; a scenario that needs longer has failed. */
  readonly convergeTimeoutMs: number;
}

const SHORT: Profile = {
  name: 'short',
  crashes: {
    resources: 24,
    spreadMs: 10_000,
    deleteShare: 0.4,
    changeShare: 0.3,
    lifetimeMs: [2_000, 6_000],
    killAfterMs: [700, 2_500],
  },
  faults: { resources: 18, spreadMs: 6_000, deleteShare: 0.3, changeShare: 0.3, lifetimeMs: [2_000, 5_000] },
  watch: { resources: 12, disruptions: 2, changesPerDisruption: 4, apiserverDownMs: [1_000, 2_000] },
  failover: {
    resources: 12,
    spreadMs: 8_000,
    deleteShare: 0.3,
    changeShare: 0.3,
    lifetimeMs: [2_000, 6_000],
    leaderKills: 2,
    leaderFreezes: 1,
  },
  badInput: { observeMs: 15_000 },
  secrets: { resources: 6, kills: 2 },
  tasks: { tasks: 12, spreadMs: 6_000, killAfterMs: [700, 2_500] },
  // Idle pods that must not be paused: the 5-minute window cannot pass in a short run (see Profile.spend).
  spend: {
    burst: 12,
    fits: 5,
    freed: 2,
    deadlinePods: 6,
    deadlineSeconds: [2, 6],
    spreadMs: 6_000,
    // Longer than operator-crashes': each start first registers and proves the ProviderConfig account.
    killAfterMs: [1_500, 4_000],
    leaderKills: 2,
    killForMs: 15_000,
    failoverForMs: 15_000,
    idle: { pods: 4, expectPause: false },
    createLatencyMs: 300,
    quietMs: 3_000,
  },
  // The outage alone takes about 30 s: the node's 20 s grace period, the eviction, the operators' start.
  virtualNode: { deployments: 2, replicas: [1, 2], disruptions: 3 },
  convergeTimeoutMs: 90_000,
};

const FULL: Profile = {
  name: 'full',
  crashes: {
    resources: 300,
    spreadMs: 120_000,
    deleteShare: 0.4,
    changeShare: 0.3,
    lifetimeMs: [3_000, 30_000],
    killAfterMs: [1_000, 4_000],
  },
  faults: {
    resources: 150,
    spreadMs: 60_000,
    deleteShare: 0.3,
    changeShare: 0.3,
    lifetimeMs: [3_000, 30_000],
  },
  watch: { resources: 60, disruptions: 12, changesPerDisruption: 10, apiserverDownMs: [1_000, 8_000] },
  failover: {
    resources: 90,
    spreadMs: 60_000,
    deleteShare: 0.3,
    changeShare: 0.3,
    lifetimeMs: [3_000, 30_000],
    leaderKills: 12,
    leaderFreezes: 4,
  },
  badInput: { observeMs: 180_000 },
  secrets: { resources: 30, kills: 5 },
  tasks: { tasks: 80, spreadMs: 40_000, killAfterMs: [1_000, 4_000] },
  // The idle pods' 5-minute window passes during the failovers: the scenario takes about 8 minutes.
  spend: {
    burst: 40,
    fits: 12,
    freed: 4,
    deadlinePods: 16,
    deadlineSeconds: [2, 15],
    spreadMs: 20_000,
    killAfterMs: [1_500, 5_000],
    leaderKills: 6,
    killForMs: 90_000,
    // Past the idle pods' window, so that their pauses are taken and kept while leaders fail over.
    failoverForMs: 420_000,
    idle: { pods: 8, expectPause: true },
    createLatencyMs: 300,
    quietMs: 10_000,
  },
  virtualNode: { deployments: 4, replicas: [1, 4], disruptions: 12 },
  convergeTimeoutMs: 240_000,
};

export const PROFILES: Readonly<Record<Profile['name'], Profile>> = { short: SHORT, full: FULL };
