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
  convergeTimeoutMs: 240_000,
};

export const PROFILES: Readonly<Record<Profile['name'], Profile>> = { short: SHORT, full: FULL };
