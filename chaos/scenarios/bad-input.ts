import { CREATE_INTENT, EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { sleep } from '../../src/lib/delay.ts';
import { defaultControllerRateLimiter } from '../../src/controller/queue-rate-limiters.ts';
import { condition, resources } from '../../test/support/operator.ts';
import { checkAdmission } from '../admission-fuzz.ts';
import { convergenceProblem } from '../convergence.ts';
import type { Life } from '../driver.ts';
import { liveOwned, type Observation, resourceOfTracked } from '../observation.ts';
import { sumOf } from '../prometheus.ts';
import { type Failure, failuresByResource, failuresOf } from '../reconcile-log.ts';
import { round, type ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { namespaceOf, Trial } from '../trial.ts';
import { tenantAttacks } from '../tenant-attacks.ts';
import type { Spec } from '../workload.ts';

const INJECTION = `'; DROP TABLE pods;-- $(rm -rf /) {{ .Values }} <script>alert(1)</script> \u202e\u0007`;
const UNICODE = 'naïve-模型-🚀-Ω';

/** What a hostile resource must come to: converged anyway, a terminal refusal, or a paced retry. */
type Expectation = { expect: 'converge' } | { expect: 'terminal' } | { expect: 'retrying'; reason: string };
type Hostile = Life & Expectation;

const pod = (spec: Spec = {}): Spec => ({
  image: 'ubuntu:24.04',
  gpuType: 'NVIDIA L40S',
  gpuCount: 1,
  ...spec,
});
const vm = (spec: Spec = {}): Spec => ({ vmTypeId: 401, region: 'us-east-1', isSpot: false, ...spec });
const endpoint = (spec: Spec = {}): Spec => ({
  image: 'ghcr.io/example/worker:1.0',
  resources: [{ region: 'us-east-1', gpuType: 'NVIDIA L40S', gpuCount: 1 }],
  ...spec,
});
const fromSecret = (key: string, name: string, secretKey: string) => ({
  key,
  valueFrom: { secretKeyRef: { name, key: secretKey } },
});

/** Resources the apiserver admits but the operator can never converge, or only with care. */
function hostileResources(): Hostile[] {
  const hostile = (
    kind: Hostile['kind'],
    name: string,
    spec: Spec,
    expectation: Expectation,
    annotations: Record<string, string> = {},
  ): Hostile => ({
    kind,
    name,
    spec,
    annotations,
    createAt: 0,
    changes: [],
    rejected: expectation.expect === 'terminal',
    ...expectation,
  });
  const retrying = (reason: string): Expectation => ({ expect: 'retrying', reason });
  return [
    hostile(
      'GpuPod',
      'missing-secret',
      pod({ environmentVars: [fromSecret('TOKEN', 'absent', 'token')] }),
      retrying('SecretNotFound'),
    ),
    hostile(
      'GpuPod',
      'missing-key',
      pod({ environmentVars: [fromSecret('TOKEN', 'present', 'token')] }),
      retrying('SecretKeyNotFound'),
    ),
    hostile(
      'ServerlessEndpoint',
      'sle-missing-secret',
      endpoint({ envVars: [fromSecret('TOKEN', 'absent', 'token')] }),
      retrying('SecretNotFound'),
    ),
    hostile('GpuVm', 'unknown-vm-type', vm({ vmTypeId: 999 }), { expect: 'terminal' }),
    hostile('GpuPod', 'unknown-gpu', pod({ gpuType: 'NVIDIA Imaginary 9000' }), { expect: 'terminal' }),
    // Over a MiB of environment: the apiserver stores it, the cloud refuses a body that large.
    hostile(
      'GpuPod',
      'huge-env',
      pod({
        environmentVars: Array.from({ length: 40 }, (_, index) => ({
          key: `BIG_${index}`,
          value: 'x'.repeat(32_000),
        })),
      }),
      { expect: 'terminal' },
    ),
    hostile(
      'GpuPod',
      'injection',
      pod({
        name: INJECTION,
        initializationCommand: INJECTION,
        environmentVars: [{ key: 'EVIL', value: INJECTION }],
      }),
      { expect: 'converge' },
    ),
    hostile('GpuPod', 'unicode', pod({ name: UNICODE, environmentVars: [{ key: 'NAME', value: UNICODE }] }), {
      expect: 'converge',
    }),
    hostile(
      'ServerlessEndpoint',
      'sle-webhook',
      endpoint({
        webhook: 'https://hooks.example.com/$(reboot)?q=<script>',
        initializationCommand: INJECTION,
      }),
      { expect: 'converge' },
    ),
    hostile('GpuVm', 'injected-id', vm(), { expect: 'terminal' }, { [EXTERNAL_ID]: "'; DROP TABLE vms;--" }),
    hostile('GpuPod', 'long-id', pod(), { expect: 'terminal' }, { [EXTERNAL_ID]: '9'.repeat(5_000) }),
    hostile('GpuPod', 'future-intent', pod(), { expect: 'converge' }, { [CREATE_INTENT]: '9999999999999' }),
    hostile('GpuPod', 'garbage-intent', pod(), { expect: 'converge' }, { [CREATE_INTENT]: 'yesterday' }),
  ];
}

const RECONCILES = 'controller_runtime_reconcile_total';

/** Most operator CPU while it only retries and waits: a spinning loop would use a whole core. */
const IDLE_CPU_TARGET = 0.1;

/**
 * Scenario 5. Every invalid value of every field is refused at admission with a message naming the
 * field; then resources the apiserver admits but that cannot (or can barely) converge — missing Secrets
 * and keys, specs the cloud refuses, an oversized spec, injection-looking and unicode strings, hostile
 * annotations — are watched for a while. The operator must not crash, must report each on the
 * resource, must not retry a terminal refusal, and must back off exponentially on the others. Last, a
 * tenant of another namespace attacks resources of this one (`tenant-attacks.ts`): it must touch no
 * foreign cloud object.
 */
export async function badInput(run: RunContext): Promise<ScenarioResult> {
  const startedAt = Date.now();
  // Resync as in production (60 min): the backoff, not the test's resync, must pace the retries.
  const label = 'bad-input';
  const attackerNs = `${namespaceOf(label)}-tenant`;
  const trial = await Trial.open(run, {
    label,
    flags: ['--resync', '60', '--namespace', `${namespaceOf(label)},${attackerNs}`],
  });
  try {
    const admission = await checkAdmission(run.cluster, trial.namespace);
    await run.cluster.create(resources.secret, trial.namespace, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'present' },
      stringData: { other: 'value' },
    });
    await trial.startOperators();
    const hostile = hostileResources();
    await trial.drive(hostile);
    const windowStart = Date.now();
    const cpuStart = await trial.replica.cpuSeconds();
    const reconcilesStart = sumOf(await trial.replica.metrics(), RECONCILES);
    await sleep(run.profile.badInput.observeMs);
    const minutes = (Date.now() - windowStart) / 60_000;
    const cpu = ((await trial.replica.cpuSeconds()) - cpuStart) / (minutes * 60);
    const reconciles = sumOf(await trial.replica.metrics(), RECONCILES) - reconcilesStart;
    const healthy = await trial.replica.healthy();
    const verdicts = judge(hostile, trial, await trial.observe());
    const attacks = await tenantAttacks(run, trial, attackerNs);
    const cleanup = await trial.deleteEverything();
    const findings = await trial.audit();
    const retrying = verdicts.filter((verdict) => verdict.pace !== undefined);
    const slowest = retrying.map((verdict) => verdict.pace as Pace);
    return {
      scenario: 'bad-input',
      ops: admission.cases + hostile.length + attacks.attacks,
      kills: 0,
      duplicates: findings.duplicates,
      leaks: findings.leaks,
      stuckFinalizers: findings.stuckFinalizers,
      convergenceMs: null,
      apiCalls: trial.sim.calls.snapshot().total,
      baselineApiCalls: null,
      figures: {
        admissionCases: admission.cases,
        admissionAccepted: admission.accepted.length,
        admissionUnclear: admission.unclear.length,
        hostileResources: hostile.length,
        tenantAttacks: attacks.attacks,
        foreignObjectsTouched: attacks.foreignObjectsTouched,
        maxAttemptsRetrying: Math.max(0, ...slowest.map((pace) => pace.attempts)),
        allowedAttempts: smallest(slowest.map((pace) => pace.allowed)),
        lastIntervalS: smallest(slowest.map((pace) => pace.lastIntervalMs / 1000)),
        growth: smallest(slowest.map((pace) => pace.growth).filter((growth) => !Number.isNaN(growth))),
        reconcilesPerResourcePerMinute: round(reconciles / hostile.length / minutes),
        perHourAtCap: round(perHourAtCap()),
        operatorCpu: round(cpu),
        cleanupS: round(cleanup.ms / 1000),
      },
      violations: [
        ...admission.accepted.map((label) => `admitted: ${label}`),
        ...admission.unclear.map((label) => `unclear refusal: ${label}`),
        ...verdicts.flatMap((verdict) => verdict.problems),
        ...attacks.problems.map((problem) => `tenant attack: ${problem}`),
        ...(trial.crashes > 0 ? [`the operator crashed ${trial.crashes} time(s)`] : []),
        ...(healthy ? [] : ['the operator failed its liveness probe']),
        ...(findings.duplicates + findings.leaks + findings.stuckFinalizers > 0 ? findings.notes : []),
        ...(cleanup.converged ? [] : [`${cleanup.unconverged} resource(s) not cleaned up`]),
      ],
      missedTargets:
        cpu > IDLE_CPU_TARGET
          ? [
              `the operator used ${round(cpu * 100)}% CPU while only retrying (target ${IDLE_CPU_TARGET * 100}%)`,
            ]
          : [],
      notes: [`foreign objects touched: ${attacks.foreignObjectsTouched}`, ...cleanup.problems, ...findings.notes],
      durationMs: Date.now() - startedAt,
    };
  } finally {
    await trial.close();
  }
}

interface Pace {
  /** Failed reconciles seen. */
  readonly attempts: number;
  /** Most failed reconciles the controller's backoff allows in the window. */
  readonly allowed: number;
  readonly lastIntervalMs: number;
  /** Median ratio of consecutive backoff-paced intervals: about 2 while backing off (NaN: too few seen). */
  readonly growth: number;
}

interface Verdict {
  readonly problems: string[];
  readonly pace?: Pace;
}

function judge(hostile: readonly Hostile[], trial: Trial, observation: Observation): Verdict[] {
  const failures = failuresByResource(trial.logLines());
  return hostile.map((item) => {
    const tracked = trial.ledger.get(item.kind, item.name);
    const label = `${item.kind}/${item.name}`;
    if (!tracked) return { problems: [`${label} was never created`] };
    const seen = failuresOf(failures, item.kind, trial.namespace, item.name);
    if (item.expect !== 'retrying') {
      const problem = convergenceProblem(tracked, observation);
      const retried = seen.filter((failure) => failure.terminal).length - 1;
      return {
        problems: [
          ...(problem ? [`${label}: ${problem}`] : []),
          ...(retried > 0 ? [`${label}: a terminal refusal was retried ${retried} time(s)`] : []),
        ],
      };
    }
    const synced = condition(resourceOfTracked(observation, tracked), 'Synced');
    const pace = paceOf(seen);
    const problems = [
      ...(synced?.reason === item.reason
        ? []
        : [`${label}: Synced reason ${synced?.reason}, expected ${item.reason}`]),
      ...(liveOwned(observation, tracked).length > 0
        ? [`${label}: a cloud object was made without its Secret`]
        : []),
      ...(pace.attempts > pace.allowed
        ? [`${label}: ${pace.attempts} reconciles, the backoff allows ${pace.allowed}: a hot loop`]
        : []),
    ];
    return { problems, pace };
  });
}

/**
 * Retries sooner than this are paced by the wait for a fresh cloud list (the poll interval), not yet by
 * the backoff; growth is measured on the longer ones.
 */
const BACKOFF_PACED_MS = 2_000;

/** How `failures` are spaced, against the controller's own rate limiter (5 ms doubling, capped). */
function paceOf(failures: readonly Failure[]): Pace {
  const intervals = failures.slice(1).map((failure, index) => failure.time - (failures[index]?.time ?? 0));
  const paced = intervals.filter((interval) => interval >= BACKOFF_PACED_MS);
  const ratios = paced.slice(1).map((interval, index) => interval / (paced[index] ?? interval));
  const sorted = [...ratios].sort((a, b) => a - b);
  const window = (failures.at(-1)?.time ?? 0) - (failures[0]?.time ?? 0);
  return {
    attempts: failures.length,
    allowed: attemptsAllowedWithin(window) + 2,
    lastIntervalMs: intervals.at(-1) ?? 0,
    growth: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN,
  };
}

/** Failures the default controller rate limiter lets through within `windowMs`, the first included. */
function attemptsAllowedWithin(windowMs: number): number {
  const limiter = defaultControllerRateLimiter();
  let attempts = 1;
  for (let elapsed = limiter.when('probe'); elapsed <= windowMs; elapsed += limiter.when('probe'))
    attempts += 1;
  return attempts;
}

/**
 * Reconciles per hour of one resource whose failure never clears, once its backoff has reached the
 * limiter's cap (read from the limiter itself), plus the one a 60-minute resync adds.
 */
function perHourAtCap(): number {
  const limiter = defaultControllerRateLimiter();
  let cap = 0;
  for (let failure = 0; failure < 64; failure += 1) cap = limiter.when('probe');
  return 3_600_000 / cap + 1;
}

/** The smallest of `values`, rounded; null when there is none. */
function smallest(values: readonly number[]): number | null {
  return values.length === 0 ? null : round(Math.min(...values));
}
