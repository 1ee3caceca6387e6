import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { sleep } from '../../src/lib/delay.ts';
import { OWNER_ENV } from '../../src/managed/core/annotations.ts';
import { findModel } from '../../src/sim/catalog.ts';
import { Market } from '../../src/sim/market.ts';
import type { PodState, RunningSimulator, SimState } from '../../src/sim/index.ts';
import { condition, isReady, resources, type TestObject } from '../../test/support/operator.ts';
import { removeAccount } from '../accounts.ts';
import { deleteResource, type Life, operations } from '../driver.ts';
import { killRepeatedly } from '../killer.ts';
import { persistently, readResources, resourceKey } from '../kube.ts';
import type { Replica } from '../operators.ts';
import type { Random } from '../random.ts';
import { round, type ScenarioResult, worstOf } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { Trial } from '../trial.ts';
import { awaitLeader, leaderElectionFlags } from './leader-failover.ts';

// Budgets, deadlines and idle stops while operators die. Two accounts in one simulator: the operator's own
// (its flags' key), which holds the deadline and idle pods, and a ProviderConfig account of its own
// organisation whose account-wide budget fits exactly `fits` one-GPU pods, which a burst overruns.

/** As in operator-crashes: kills land between a cloud call carried out and its answer (an id, a delete). */
const ANSWER_DELAY_MS = 400;
/** How often the simulator's state is sampled for the budget invariant; its call log less often. */
const SAMPLE_MS = 100;
const CALLS_SAMPLE_MS = 500;
const ACCOUNT = 'chaos-spend';
const BUDGET = 'burst-cap';
const BUDGET_ORG = 'chaos-spend-budget';
/** The burst's pods: one on-demand L40S in one region, a single offer, so each is priced exactly. */
const BUDGET_GPU = 'NVIDIA L40S';
const REGION = 'us-east-1';
/** Deadline and idle pods, on the operator's own account (no budget there). */
const HOLD_GPU = 'NVIDIA GeForce RTX 4090';
const IMAGE = 'pytorch/pytorch:2.4.0';
const IDLE_STOP = { gpuUtilizationBelowPercent: 10, forMinutes: 5 };
const IDLE_PERCENT = 2;
const BUSY_PERCENT = 90;
/** Idle checks often and with room: the window, not the schedule, is what takes time here. */
const IDLE_FLAGS = ['--idle-check-interval', '2', '--idle-check-rps', '20'];
/** How long after its window an idle pod may take to be paused: checks every 2 s, failovers of ~5 s. */
const IDLE_PAUSE_SLACK_MS = 90_000;
const LEADER_FLAGS = leaderElectionFlags('chaos-spend');
/**
 * A leader is killed after leading this long: a new leader first registers and proves the ProviderConfig
 * account and lists the cloud (each answer 400 ms late), so a shorter reign would rarely reach a change.
 */
const LEAD_FOR_MS: readonly [number, number] = [2_000, 5_000];
const SHOWN = 8;
/** Failures of a resource whose ProviderConfig's account the operator has not registered (or proved) yet. */
const ACCOUNT_NOT_READY = new Set(['ProviderConfigNotFound', 'ProviderConfigNotReady']);

type Role =
  | { readonly kind: 'budget' }
  | { readonly kind: 'deadline'; readonly action: 'Pause' | 'Delete'; readonly seconds: number }
  | { readonly kind: 'idle'; readonly busy: boolean };

interface SpendPod {
  readonly name: string;
  readonly role: Role;
  /** A running pod of the burst the suite deleted in stage 2 to free room. */
  freed: boolean;
}

const pausedBySchema = z.object({ reason: z.string() });
const startTimeSchema = z.string();

function pausedByOf(obj: TestObject | undefined): string | undefined {
  const parsed = pausedBySchema.safeParse(obj?.status?.pausedBy);
  return parsed.success ? parsed.data.reason : undefined;
}

/** The catalogue's prices: the scenario never changes the simulator's. */
const catalogue = new Market();

/** A pod's price by the simulator's own catalogue: its model's price per GPU-hour × its GPUs. */
function priceOf(pod: PodState): number {
  const model = findModel(pod.gpuType);
  return model ? catalogue.hourly(model, pod.gpuCount, pod.isSpot) : Number.NaN;
}

/** Statuses in which the simulator releases a pod's GPUs (src/sim/pods/service.ts): it costs nothing then. */
const RELEASED = new Set(['PAUSED', 'TERMINATED', 'FAILED']);
const PAUSED = new Set(['PAUSING', 'PAUSED']);
const GONE = new Set(['TERMINATING', 'TERMINATED']);

/** One sample in which the budget account cost more than its budget. */
interface Overshoot {
  readonly at: number;
  readonly spend: number;
  readonly pods: readonly string[];
}

/**
 * Watches the simulator all scenario long: the budget account's spend every 100 ms, each pod's first
 * pause and deletion, the pause, resume and delete calls on each pod id (from the call log, which is
 * bounded, so it is drained often), and sets each idle pod's GPU utilisation as soon as its cloud pod
 * exists (samples are taken only while it runs, so the whole window reads what was set).
 */
class SpendWatch {
  readonly #sim: RunningSimulator;
  readonly #limit: number;
  readonly #utilisation: (uid: string) => number | undefined;
  readonly #seen = new WeakSet<object>();
  readonly #set = new Set<string>();
  readonly #timers: NodeJS.Timeout[] = [];
  /** Calls per `operation id`. */
  readonly calls = new Map<string, number>();
  /** uid → when its cloud pod was first seen pausing or paused, and deleted. */
  readonly pausedAt = new Map<string, number>();
  readonly goneAt = new Map<string, number>();
  /** uid → when its utilisation was set. */
  readonly utilisationSetAt = new Map<string, number>();
  readonly overshoots: Overshoot[] = [];
  overshootSamples = 0;
  samples = 0;
  maxSpend = 0;
  unpriced = 0;

  /** `utilisation`: the GPU utilisation to set on the cloud pods of a resource, by its uid (idle pods). */
  constructor(sim: RunningSimulator, limit: number, utilisation: (uid: string) => number | undefined) {
    this.#sim = sim;
    this.#limit = limit;
    this.#utilisation = utilisation;
  }

  start(): void {
    this.#timers.push(setInterval(() => this.sample(), SAMPLE_MS));
    this.#timers.push(setInterval(() => this.drainCalls(), CALLS_SAMPLE_MS));
  }

  stop(): void {
    for (const timer of this.#timers) clearInterval(timer);
    this.sample();
    this.drainCalls();
  }

  callsOn(operation: string, id: string | undefined): number {
    return id === undefined ? 0 : (this.calls.get(`${operation} ${id}`) ?? 0);
  }

  sample(): void {
    const state = this.#sim.state.snapshot();
    const at = Date.now();
    this.samples += 1;
    let spend = 0;
    const billed: string[] = [];
    for (const pod of state.pods) {
      const owner = pod.environment[OWNER_ENV];
      if (owner !== undefined) {
        if (PAUSED.has(pod.status) && !this.pausedAt.has(owner)) this.pausedAt.set(owner, at);
        if (GONE.has(pod.status) && !this.goneAt.has(owner)) this.goneAt.set(owner, at);
        this.#setUtilisation(owner, pod);
      }
      if (pod.org !== BUDGET_ORG || RELEASED.has(pod.status)) continue;
      const price = priceOf(pod);
      if (Number.isNaN(price)) {
        this.unpriced += 1;
        continue;
      }
      spend += price;
      billed.push(`${pod.name} (${pod.id}, ${pod.status})`);
    }
    this.maxSpend = Math.max(this.maxSpend, spend);
    if (spend > this.#limit + 1e-9) {
      this.overshootSamples += 1;
      if (this.overshoots.length < 3) this.overshoots.push({ at, spend, pods: billed });
    }
  }

  drainCalls(): void {
    for (const call of this.#sim.calls.log()) {
      if (this.#seen.has(call)) continue;
      this.#seen.add(call);
      const id = call.params.id ?? call.params.pod_id;
      if (id === undefined) continue;
      const key = `${call.operation} ${id}`;
      this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
    }
  }

  #setUtilisation(owner: string, pod: PodState): void {
    const percent = this.#utilisation(owner);
    if (percent === undefined || this.#set.has(pod.id) || GONE.has(pod.status)) return;
    this.#sim.metrics.setGpuUtilization(pod.id, percent);
    this.#set.add(pod.id);
    if (!this.utilisationSetAt.has(owner)) this.utilisationSetAt.set(owner, Date.now());
  }
}

/** What the suite expects of the scenario's pods at a given point. */
interface Expectation {
  /** Running pods of the burst: the budget's `fits`. */
  readonly running: number;
  /** Idle pods must have been paused by now (their window has passed). */
  readonly idlePaused: boolean;
  /**
   * Judge the cloud's side only. While operators are killed every second or two, the resources' status
   * lags (each start re-registers the ProviderConfig account first): the kills go on until the cloud is
   * where it should be, and the status is judged once they have stopped.
   */
  readonly cloudOnly: boolean;
}

/**
 * Pods not where they should be yet (`pending`), and what can no longer be mended (`broken`); a pod with
 * something broken is not waited for. `running`: pods of the burst whose cloud pod runs (`synced`: and
 * whose resource says Synced=True), `refused`: those refused for the budget, with no cloud pod.
 */
interface Verdict {
  readonly pending: string[];
  readonly broken: string[];
  readonly running: string[];
  readonly synced: string[];
  readonly refused: string[];
}

/** Synced reasons that no retry mends: none of these pods names an id by hand, so each is the operator's. */
const STUCK_REASONS = new Set(['ExternalResourceNotFound', 'ExternalResourceGone']);

/**
 * Judges every pod against the simulator's state and call log and the apiserver: the budget's pods run
 * or are refused (exactly `running` run), deadline pods are paused or deleted and finished, idle pods are
 * paused exactly once and busy ones never; nothing made twice, nothing resumed.
 */
function judge(
  pods: readonly SpendPod[],
  trial: Trial,
  watch: SpendWatch,
  found: ReadonlyMap<string, TestObject>,
  state: SimState,
  expect: Expectation,
): Verdict {
  const verdict: Verdict = { pending: [], broken: [], running: [], synced: [], refused: [] };
  for (const pod of pods) {
    const label = `GpuPod/${pod.name}`;
    const tracked = trial.ledger.get('GpuPod', pod.name);
    if (!tracked) {
      verdict.pending.push(`${label}: not created yet`);
      continue;
    }
    const { pending, broken } = judgePod(pod, tracked.uid, watch, found, state, expect, verdict);
    if (broken.length > 0) verdict.broken.push(...[...broken, ...pending].map((line) => `${label}: ${line}`));
    else verdict.pending.push(...pending.map((line) => `${label}: ${line}`));
  }
  const live = pods.filter((pod) => pod.role.kind === 'budget' && !pod.freed).length;
  const { running, refused } = verdict;
  if (running.length > expect.running) {
    verdict.broken.push(`${running.length} pods of the burst run, the budget fits ${expect.running}`);
  } else if (running.length + refused.length === live && running.length < expect.running) {
    verdict.pending.push(`${running.length} pods of the burst run, the budget fits ${expect.running}`);
  }
  return verdict;
}

function judgePod(
  pod: SpendPod,
  uid: string,
  watch: SpendWatch,
  found: ReadonlyMap<string, TestObject>,
  state: SimState,
  expect: Expectation,
  verdict: Verdict,
): { pending: string[]; broken: string[] } {
  const pending: string[] = [];
  const broken: string[] = [];
  /** A problem of the resource's status, not of the cloud. */
  const lagging = (line: string) => {
    if (!expect.cloudOnly) pending.push(line);
  };
  const obj = found.get(resourceKey('GpuPod', pod.name));
  const made = state.pods.filter((cloud) => cloud.environment[OWNER_ENV] === uid);
  const id = obj?.status?.id;
  const cloud = made.find((candidate) => candidate.id === id);
  const pauses = watch.callsOn('pods.pause', id);
  const resumes = made.reduce((sum, candidate) => sum + watch.callsOn('pods.resume', candidate.id), 0);
  const pausedBy = pausedByOf(obj);
  const synced = condition(obj, 'Synced');
  if (made.length > 1)
    broken.push(`${made.length} cloud pods made for it (${made.map((c) => c.id).join(', ')})`);
  if (resumes > 0) broken.push(`resumed ${resumes} time(s) in the cloud`);
  if (pod.freed) return { pending, broken };
  if (!obj) return { pending, broken: [...broken, 'gone from the apiserver'] };
  if (synced?.status === 'False' && STUCK_REASONS.has(synced.reason)) {
    broken.push(`stuck on a terminal Synced=False ${synced.reason}: ${synced.message}`);
  }
  switch (pod.role.kind) {
    case 'budget': {
      if (id !== undefined && cloud?.status === 'RUNNING') {
        verdict.running.push(pod.name);
        if (synced?.status === 'True') verdict.synced.push(pod.name);
        else lagging(`runs, Synced is ${synced?.status} ${synced?.reason}`);
      } else if (id === undefined && made.length === 0 && synced?.reason === 'BudgetExceeded') {
        verdict.refused.push(pod.name);
      } else if (expect.cloudOnly && made.length === 0) {
        verdict.refused.push(pod.name);
      } else {
        pending.push(
          `neither running nor refused: status.id ${id}, cloud ${cloud?.status ?? 'none'} (${made.length} made), Synced ${synced?.status} ${synced?.reason}`,
        );
      }
      break;
    }
    case 'deadline': {
      const exceeded = condition(obj, 'DeadlineExceeded');
      if (made.length === 0) {
        pending.push('no cloud pod yet');
        break;
      }
      if (exceeded?.status !== 'True') lagging(`DeadlineExceeded is ${exceeded?.status ?? 'absent'}`);
      if (pod.role.action === 'Pause') {
        if (pausedBy !== 'DeadlineExceeded')
          lagging(`pausedBy ${pausedBy ?? 'none'}, expected DeadlineExceeded`);
        if (cloud?.status !== 'PAUSED')
          pending.push(`the cloud pod is ${cloud?.status ?? 'missing'}, expected PAUSED`);
        if (pauses > 1) broken.push(`${pauses} pause calls on ${id}, expected exactly one`);
        else if (cloud?.status === 'PAUSED' && pauses === 0)
          broken.push(`paused with no pause call on ${id} seen`);
      } else {
        const failed = condition(obj, 'Failed');
        if (failed?.status !== 'True' || failed.reason !== 'DeadlineExceeded') {
          lagging(
            `Failed is ${failed?.status ?? 'absent'} ${failed?.reason ?? ''}, expected True DeadlineExceeded`,
          );
        }
        const live = made.filter((candidate) => candidate.status !== 'TERMINATED');
        if (live.length > 0) {
          pending.push(`cloud pod(s) ${live.map((c) => `${c.id} ${c.status}`).join(', ')} not terminated`);
        }
        const pausesAll = made.reduce((sum, candidate) => sum + watch.callsOn('pods.pause', candidate.id), 0);
        if (pausesAll > 0) broken.push(`${pausesAll} pause call(s) for a pod whose deadline deletes it`);
      }
      break;
    }
    case 'idle': {
      if (made.length === 0) {
        pending.push('no cloud pod yet');
      } else if (expect.idlePaused && !pod.role.busy) {
        if (pausedBy !== 'Idle') lagging(`pausedBy ${pausedBy ?? 'none'}, expected Idle`);
        if (cloud?.status !== 'PAUSED')
          pending.push(`the cloud pod is ${cloud?.status ?? 'missing'}, expected PAUSED`);
        if (pauses > 1) broken.push(`${pauses} pause calls on ${id}, expected exactly one`);
      } else {
        const what = pod.role.busy ? 'a busy pod' : 'an idle pod younger than its window';
        if (pausedBy !== undefined) broken.push(`${what} was paused by the operator (${pausedBy})`);
        if (pauses > 0) broken.push(`${what} had ${pauses} pause call(s) on ${id}`);
        if (cloud?.status !== 'RUNNING')
          pending.push(`the cloud pod is ${cloud?.status ?? 'missing'}, expected RUNNING`);
      }
      break;
    }
  }
  return { pending, broken };
}

/**
 * Scenario 8. Spend controls while operators die. Stage 1: a lone operator is SIGKILLed at random
 * while a burst of one-GPU pods (more than the budget fits) is applied at once against an account whose
 * account-wide budget fits exactly `fits` of them, its creates slowed; pods with deadlines of a few seconds
 * (half Pause, half Delete) and pods with an idle stop are created around the kills. Stage 2: two
 * replicas with leader election; running pods of the burst are deleted to free room, more deadline pods
 * come, and the leader is killed again and again (in the full profile until the idle pods' 5-minute window
 * has passed and they were paused). The simulator's state is sampled every 100 ms throughout: the budget
 * account's spend at its own prices must never exceed the budget. At the end exactly `fits` pods of the
 * burst run, the rest are refused with BudgetExceeded; each deadline pod is paused once (Pause) or deleted
 * and Failed, made exactly once (Delete); idle pods are paused exactly once and never resumed, busy ones
 * never paused.
 */
export async function spendControls(run: RunContext): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const knobs = run.profile.spend;
  const random = run.random.fork('spend');
  const budgetKey = `chaos-budget-key-${randomBytes(12).toString('hex')}`;
  const trial = await Trial.open(run, {
    label: 'spend',
    answerDelayMs: ANSWER_DELAY_MS,
    apiKeys: [{ key: budgetKey, org: BUDGET_ORG }],
    flags: IDLE_FLAGS,
  });
  const { cluster } = run;
  const ns = trial.namespace;
  const violations: string[] = [];
  const notes: string[] = [];
  let watch: SpendWatch | undefined;
  try {
    await trial.startOperators();
    const price = await offerPrice(trial.sim.url, budgetKey);
    const listed = catalogue.hourly(requiredModel(BUDGET_GPU), 1, false);
    if (Math.abs(price - listed) > 1e-9) {
      violations.push(`the offer's price $${price}/h is not the catalogue's $${listed}/h`);
    }
    // Exactly `fits` pods: the operator allows a spend equal to the limit, and one more pod is a whole price over.
    const limit = price * knobs.fits;
    await makeAccount(run, trial, budgetKey, limit);

    // Stage 1: the lone operator killed at random.
    const pods: SpendPod[] = [];
    const plan = (name: string, role: Role) => {
      pods.push({ name, role, freed: false });
      return name;
    };
    const burst: Life[] = Array.from({ length: knobs.burst }, (_, index) => ({
      kind: 'GpuPod',
      name: plan(`burst-${index}`, { kind: 'budget' }),
      spec: budgetPodSpec(),
      createAt: 0,
      changes: [],
    }));
    const idleRandom = random.fork('idle');
    const idle: Life[] = Array.from({ length: knobs.idle.pods }, (_, index) => {
      const busy = index % 2 === 1;
      return {
        kind: 'GpuPod',
        name: plan(`${busy ? 'busy' : 'idle'}-${index}`, { kind: 'idle', busy }),
        spec: { ...holdPodSpec(), idleStop: IDLE_STOP },
        createAt: idleRandom.between(0, 1_000),
        changes: [],
      };
    });
    const deadlines = (stage: number, stream: Random): Life[] =>
      Array.from({ length: knobs.deadlinePods }, (_, index) => {
        const action = index % 2 === 0 ? 'Pause' : 'Delete';
        const seconds = stream.int(...knobs.deadlineSeconds);
        return {
          kind: 'GpuPod',
          name: plan(`deadline-${stage}-${index}-${action.toLowerCase()}`, {
            kind: 'deadline',
            action,
            seconds,
          }),
          spec: { ...holdPodSpec(), activeDeadlineSeconds: seconds, deadlineAction: action },
          createAt: stream.between(0, knobs.spreadMs),
          changes: [],
        };
      });
    const firstDeadlines = deadlines(1, random.fork('deadlines-1'));
    const utilisation = (uid: string) => {
      const name = trial.ledger.byUid(uid)?.name;
      const role = pods.find((pod) => pod.name === name)?.role;
      return role?.kind === 'idle' ? (role.busy ? BUSY_PERCENT : IDLE_PERCENT) : undefined;
    };
    const lifeWatch = new SpendWatch(trial.sim, limit, utilisation);
    watch = lifeWatch;
    lifeWatch.start();
    trial.sim.faults.set({ latencyMs: knobs.createLatencyMs, operations: ['pods.create'] });

    const look = async () => {
      lifeWatch.drainCalls();
      const found = await persistently('read the pods', () => readResources(cluster, ns));
      return { found, state: trial.sim.state.snapshot() };
    };
    const verdictNow = async (subset: readonly SpendPod[], expect: Expectation) => {
      const { found, state } = await look();
      return judge(subset, trial, lifeWatch, found, state, expect);
    };
    /**
     * Polls until no pod of `subset` has been pending for `stableMs` in a row (a new leader's first
     * reconciles may unsettle what looked settled), or `timeoutMs`; answers the last verdict and when the
     * stable stretch began (undefined if it never did).
     */
    const settle = async (
      subset: () => readonly SpendPod[],
      expect: Expectation,
      timeoutMs: number,
      stableMs = 0,
    ) => {
      const deadline = Date.now() + timeoutMs;
      let since: number | undefined;
      for (;;) {
        const verdict = await verdictNow(subset(), expect);
        const now = Date.now();
        since = verdict.pending.length === 0 ? (since ?? now) : undefined;
        if ((since !== undefined && now - since >= stableMs) || now > deadline) return { verdict, since };
        await sleep(500);
      }
    };

    const stage1Started = Date.now();
    const driving = trial.drive([...burst, ...idle, ...firstDeadlines]);
    const firstStage = { running: knobs.fits, idlePaused: false, cloudOnly: true };
    const stage1 = driving.then(
      async () => (await settle(() => pods, firstStage, run.profile.convergeTimeoutMs)).verdict,
    );
    const [drive1, kills] = await Promise.all([
      driving,
      killRepeatedly(
        trial.replica,
        random.fork('kills'),
        knobs.killAfterMs,
        Promise.race([stage1, sleep(knobs.killForMs)]),
        2,
      ),
      stage1,
    ]);
    const stage1Verdict = await stage1;
    const stage1S = round((Date.now() - stage1Started) / 1000);
    if (stage1Verdict.pending.length > 0) {
      notes.push(`stage 1 never settled in the cloud: ${stage1Verdict.pending.slice(0, SHOWN).join('; ')}`);
    }

    // Stage 2: leader election; room freed, more deadlines, the leader killed again and again.
    const stage2Started = Date.now();
    await trial.replaceOperators(2, [...IDLE_FLAGS, ...LEADER_FLAGS, '--lease-namespace', ns]);
    // Pods whose cloud pod runs: right after a start their resources may read Synced=False for a moment.
    const runningNow = (await verdictNow(pods, firstStage)).running;
    const toFree = pickSome(random.fork('free'), runningNow, knobs.freed);
    for (const name of toFree) {
      const pod = pods.find((each) => each.name === name);
      const tracked = trial.ledger.get('GpuPod', name);
      if (!pod || !tracked) continue;
      pod.freed = true;
      await deleteResource(cluster, ns, trial.ledger, tracked);
    }
    const secondDeadlines = deadlines(2, random.fork('deadlines-2'));
    const drive2 = trial.drive(secondDeadlines);
    const idleWindowMs = IDLE_STOP.forMinutes * 60_000;
    const finalStage = { running: knobs.fits, idlePaused: knobs.idle.expectPause, cloudOnly: false };
    const stage2Cloud = { ...finalStage, cloudOnly: true };
    const stage2Timeout = knobs.idle.expectPause
      ? Math.max(
          run.profile.convergeTimeoutMs,
          idleWindowMs + IDLE_PAUSE_SLACK_MS - (Date.now() - stage1Started),
        )
      : run.profile.convergeTimeoutMs;
    const stage2 = drive2.then(() => settle(() => pods, stage2Cloud, stage2Timeout));
    const [drive2Stats, failovers] = await Promise.all([
      drive2,
      failLeaders(
        trial.replicas,
        random.fork('failovers'),
        Promise.race([stage2, sleep(knobs.failoverForMs)]),
        knobs.leaderKills,
      ),
      stage2,
    ]);
    const stage2S = round((Date.now() - stage2Started) / 1000);

    // After the last kill: everything settles again, cloud and status, and stays so for `quietMs`.
    const settling = Date.now();
    const settled = await settle(() => pods, finalStage, run.profile.convergeTimeoutMs, knobs.quietMs);
    const settleMs = settled.since === undefined ? null : settled.since - settling;
    lifeWatch.sample();
    const final = await verdictNow(pods, finalStage);
    const { found, state } = await look();
    if (final.pending.length > 0) violations.push(`${final.pending.length} pod problem(s) never settled`);
    violations.push(...final.pending.slice(0, SHOWN).map((line) => `not settled: ${line}`));
    violations.push(...final.broken);
    if (lifeWatch.overshootSamples > 0) {
      violations.push(
        `budget overshot in ${lifeWatch.overshootSamples} of ${lifeWatch.samples} samples (limit $${round(limit)}/h)`,
        ...lifeWatch.overshoots.map(
          (over) =>
            `at ${new Date(over.at).toISOString()} the budget account cost $${round(over.spend)}/h: ${over.pods.join(', ')}`,
        ),
      );
    }
    if (lifeWatch.unpriced > 0)
      violations.push(`${lifeWatch.unpriced} sample(s) of a pod the catalogue cannot price`);
    const budgetMade = state.pods.filter((pod) => pod.org === BUDGET_ORG).length;
    if (budgetMade !== knobs.fits + toFree.length) {
      violations.push(
        `${budgetMade} cloud pods made in the budget account, expected ${knobs.fits} + ${toFree.length} freed`,
      );
    }
    const lateness = deadlineLateness(pods, trial, lifeWatch, found);
    violations.push(...lateness.early);
    const idleFigures = idleTimes(pods, trial, lifeWatch);
    // After each start, resources of the ProviderConfig account fail until its controller has registered
    // and proved the account: counted, not judged (see docs/reliability.md).
    const accountNotReady = trial
      .logLines()
      .filter((line) => ACCOUNT_NOT_READY.has(String(line.fields.reason ?? ''))).length;
    const leaked = run.transcripts.all().filter(({ text }) => text.includes(budgetKey));
    if (leaked.length > 0)
      violations.push(
        `the budget account's API key is in the output of ${leaked.map((l) => l.label).join(', ')}`,
      );
    if (trial.crashes > 0) violations.push(`the operator crashed ${trial.crashes} time(s)`);
    const overlaps = failovers.takeovers.filter((ms) => ms < 0).length;
    if (overlaps > 0) violations.push(`${overlaps} takeover(s) before the old leader was dead: two leaders`);

    // Cleanup: every resource deleted with its cloud pods, then the account.
    trial.sim.faults.set({ latencyMs: 0, operations: null });
    const atConvergence = await trial.audit();
    const cleanup = await trial.deleteEverything();
    const findings = worstOf(atConvergence, await trial.audit());
    if (findings.duplicates > 0) violations.push(`${findings.duplicates} duplicate cloud object(s)`);
    if (findings.leaks > 0) violations.push(`${findings.leaks} leaked cloud object(s)`);
    if (findings.stuckFinalizers > 0) violations.push(`${findings.stuckFinalizers} stuck finalizer(s)`);
    if (!cleanup.converged) violations.push(`${cleanup.unconverged} resource(s) not cleaned up`);
    notes.push(...findings.notes, ...cleanup.problems);
    if (!(await removeAccount(run.cluster, trial.namespace, ACCOUNT))) violations.push(`ProviderConfig ${ACCOUNT} was never released`);

    const calls = trial.sim.calls.snapshot();
    const byOperation = (name: string) => calls.byOperation[name] ?? 0;
    const deadlinePods = pods.filter((pod) => pod.role.kind === 'deadline');
    return {
      scenario: 'spend-controls',
      ops: operations(drive1) + operations(drive2Stats) + toFree.length,
      kills: kills.kills + failovers.takeovers.length,
      duplicates: findings.duplicates,
      leaks: findings.leaks,
      stuckFinalizers: findings.stuckFinalizers,
      convergenceMs: final.pending.length === 0 && final.broken.length === 0 ? settleMs : null,
      apiCalls: calls.total,
      baselineApiCalls: null,
      figures: {
        budgetPerHour: round(limit),
        fits: knobs.fits,
        burst: knobs.burst,
        maxSpendPerHour: round(lifeWatch.maxSpend),
        spendSamples: lifeWatch.samples,
        overshootSamples: lifeWatch.overshootSamples,
        running: final.running.length,
        refused: final.refused.length,
        freed: toFree.length,
        budgetPodsMade: budgetMade,
        deadlinePauses: deadlinePods.filter((p) => p.role.kind === 'deadline' && p.role.action === 'Pause')
          .length,
        deadlineDeletes: deadlinePods.filter((p) => p.role.kind === 'deadline' && p.role.action === 'Delete')
          .length,
        worstDeadlineLateS: lateness.worstS,
        medianDeadlineLateS: lateness.medianS,
        idlePaused: idleFigures.paused,
        idleWorstPauseAfterWindowS: idleFigures.worstAfterWindowS,
        accountNotReadyFailures: accountNotReady,
        idleChecks: Math.max(0, byOperation('metrics.gpu') - byOperation('metrics.cpu')),
        pauseCalls: byOperation('pods.pause'),
        resumeCalls: byOperation('pods.resume'),
        kills: kills.kills,
        killsWhileWorking: kills.whileWorking,
        failovers: failovers.takeovers.length,
        worstTakeoverS: round(Math.max(0, ...failovers.takeovers) / 1000),
        stage1S,
        stage2S,
        cleanupS: round(cleanup.ms / 1000),
      },
      violations,
      missedTargets: [],
      notes,
      durationMs: Date.now() - startedAt,
    };
  } finally {
    watch?.stop();
    await trial.close();
  }
}

/** `count` of `items`, drawn at random without repetition. */
function pickSome<T>(random: Random, items: readonly T[], count: number): T[] {
  const left = [...items];
  const picked: T[] = [];
  while (picked.length < count && left.length > 0) {
    const [item] = left.splice(random.int(0, left.length - 1), 1);
    if (item !== undefined) picked.push(item);
  }
  return picked;
}

function budgetPodSpec(): Record<string, unknown> {
  return {
    image: IMAGE,
    gpuType: BUDGET_GPU,
    gpuCount: 1,
    regions: [REGION],
    isSpot: false,
    providerConfigRef: { name: ACCOUNT },
  };
}

function holdPodSpec(): Record<string, unknown> {
  return { image: IMAGE, gpuType: HOLD_GPU, gpuCount: 1, isSpot: false };
}

function requiredModel(gpuType: string) {
  const model = findModel(gpuType);
  if (!model) throw new Error(`the simulator's catalogue has no ${gpuType}`);
  return model;
}

/** The on-demand price per GPU-hour of the one offer every pod of the burst can get, by the cloud's search. */
async function offerPrice(url: string, apiKey: string): Promise<number> {
  const client = new GpuCloudClient({ baseUrl: url, apiKey });
  try {
    const offers = await Array.fromAsync(
      client.pods.searchGpusAll({
        gpuTypes: [BUDGET_GPU],
        regions: [REGION],
        gpuCounts: [1],
        isSpot: false,
        includeUnavailable: true,
      }),
    );
    if (offers.length !== 1)
      throw new Error(`${offers.length} offers of ${BUDGET_GPU} in ${REGION}, expected one`);
    const option = offers[0]?.gpuCountOptions.find((each) => each.gpuCount === 1);
    const price = Number(option?.price.pricePerGpuPerHour);
    if (!(price > 0)) throw new Error(`no price for one ${BUDGET_GPU}: ${option?.price.pricePerGpuPerHour}`);
    return price;
  } finally {
    await client.close();
  }
}

/** The key Secret and the ProviderConfig of the budget account; waits until the operator accepts the key. */
async function makeAccount(run: RunContext, trial: Trial, key: string, limit: number): Promise<void> {
  const { cluster } = run;
  const ns = trial.namespace;
  await cluster.create(resources.secret, ns, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${ACCOUNT}-key` },
    stringData: { 'api-key': key },
  });
  await cluster.create(resources.providerConfig, '', {
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'ProviderConfig',
    metadata: { name: ACCOUNT },
    spec: {
      apiUrl: trial.apiUrl,
      credentials: { secretRef: { namespace: ns, name: `${ACCOUNT}-key`, key: 'api-key' } },
      namespaces: { names: [ns] },
      guardrails: { budgets: [{ name: BUDGET, maxSpendPerHour: limit }] },
    },
  });
  await cluster.waitFor(
    resources.providerConfig,
    '',
    ACCOUNT,
    isReady('KeyAccepted'),
    'Ready',
    run.profile.convergeTimeoutMs,
  );
}

/**
 * How late each deadline was acted on: from `status.startTime` + the deadline to the first sample in which
 * the cloud pod was pausing (Pause) or terminating (Delete). Acting before the deadline is a violation.
 */
function deadlineLateness(
  pods: readonly SpendPod[],
  trial: Trial,
  watch: SpendWatch,
  found: ReadonlyMap<string, TestObject>,
): { worstS: number | null; medianS: number | null; early: string[] } {
  const late: number[] = [];
  const early: string[] = [];
  for (const pod of pods) {
    if (pod.role.kind !== 'deadline') continue;
    const tracked = trial.ledger.get('GpuPod', pod.name);
    const start = startTimeSchema.safeParse(found.get(resourceKey('GpuPod', pod.name))?.status?.startTime);
    if (!tracked || !start.success) continue;
    const due = Date.parse(start.data) + pod.role.seconds * 1000;
    const acted = (pod.role.action === 'Pause' ? watch.pausedAt : watch.goneAt).get(tracked.uid);
    if (acted === undefined) continue;
    if (acted < due) {
      early.push(`GpuPod/${pod.name}: acted on ${round((due - acted) / 1000)} s before its deadline`);
    }
    late.push(acted - due);
  }
  const sorted = late.toSorted((a, b) => a - b);
  const seconds = (ms: number | undefined) => (ms === undefined ? null : round(ms / 1000));
  return { worstS: seconds(sorted.at(-1)), medianS: seconds(sorted[Math.floor(sorted.length / 2)]), early };
}

/** Idle pods paused, and the latest pause after the window (from the utilisation set) had passed. */
function idleTimes(
  pods: readonly SpendPod[],
  trial: Trial,
  watch: SpendWatch,
): { paused: number; worstAfterWindowS: number | null } {
  let paused = 0;
  let worst: number | null = null;
  for (const pod of pods) {
    if (pod.role.kind !== 'idle' || pod.role.busy) continue;
    const uid = trial.ledger.get('GpuPod', pod.name)?.uid;
    const at = uid === undefined ? undefined : watch.pausedAt.get(uid);
    const set = uid === undefined ? undefined : watch.utilisationSetAt.get(uid);
    if (at === undefined) continue;
    paused += 1;
    if (set !== undefined) {
      const after = round((at - set - IDLE_STOP.forMinutes * 60_000) / 1000);
      worst = worst === null ? after : Math.max(worst, after);
    }
  }
  return { paused, worstAfterWindowS: worst };
}

/**
 * Kills the leader after it led for a while, starts it again (as a Deployment would) and times the
 * takeover, until `until` has settled and at least `minimum` times; the last kill lands after it.
 */
async function failLeaders(
  replicas: readonly Replica[],
  random: Random,
  until: Promise<unknown>,
  minimum: number,
): Promise<{ takeovers: number[] }> {
  let done = false;
  until.then(
    () => (done = true),
    () => (done = true),
  );
  const takeovers: number[] = [];
  for (let last = false; !last; ) {
    await awaitLeader(replicas);
    await sleep(random.between(...LEAD_FOR_MS));
    last = done && takeovers.length + 1 >= minimum;
    const [leader] = await awaitLeader(replicas);
    if (!leader) throw new Error('the leader vanished');
    const killedAt = Date.now();
    await leader.replica.kill();
    await leader.replica.start();
    const [next] = await awaitLeader(replicas);
    takeovers.push((next?.since ?? Number.NaN) - killedAt);
  }
  return { takeovers };
}
