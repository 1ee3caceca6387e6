// The readable side of the results: one column per size, then every target as met or missed.
import type { IdleResult } from './idle-budget.ts';
import type { InProcessIdleResult } from './idle-in-process.ts';
import type { IdleRunResult } from './idle-run.ts';
import type { ImageResult } from './image.ts';
import type { MixedResult } from './mixed-run.ts';
import type { BenchResults } from './results.ts';
import type { SizeResult } from './size-run.ts';
import type { Distribution } from './stats.ts';
import { controlPlaneCostRatio, cpuPerResource, type TargetCheck, writesPerResource } from './targets.ts';

type Row = [label: string, value: (result: SizeResult) => string];

const pct = (d: Distribution | undefined) => (d ? `${d.p50} / ${d.p99}` : '-');
const sum = (record: Record<string, number>) => Object.values(record).reduce((a, b) => a + b, 0);

const ROWS: Row[] = [
  ['load average at start', (r) => r.loadavgAtStart.join(' ')],
  ['raw apiserver: create+status/s (2 writes)', (r) => String(r.raw.resourcesPerSecond)],
  ['raw apiserver: equal writes/s (4 writes)', (r) => String(r.rawEqual.resourcesPerSecond)],
  ['operator: apiserver writes per resource', (r) => String(writesPerResource(r))],
  ['control-plane CPU per resource, operator / equal writes', (r) => `${controlPlaneCostRatio(r)}×`],
  ['operator: apply → all Ready (s)', (r) => String(r.convergence.seconds)],
  ['operator: resources Ready/s', (r) => String(r.convergence.resourcesPerSecond)],
  [
    'operator rate / equal-writes raw rate',
    (r) => `${Math.round((r.convergence.resourcesPerSecond / r.rawEqual.resourcesPerSecond) * 100)}%`,
  ],
  ['burst: create → cloud p50/p99 (ms)', (r) => pct(r.convergence.createToCloudMs)],
  ['burst: create → Ready p50/p99 (ms)', (r) => pct(r.convergence.createToReadyMs)],
  ['burst: rate-limiter wait (s)', (r) => String(r.convergence.rateLimitedSeconds)],
  ['paced: create → cloud p50/p99 (ms)', (r) => pct(r.paced.createToCloudMs)],
  ['paced: create → Ready p50/p99 (ms)', (r) => pct(r.paced.createToReadyMs)],
  ['cloud change → status, callbacks (ms)', (r) => pct(r.reaction.withCallbacksMs)],
  ['cloud change → status, polling (ms)', (r) => pct(r.reaction.withoutCallbacksMs)],
  ['steady: state lists / poll interval', (r) => String(r.steady.stateListCallsPerPollInterval)],
  [
    'steady: detail calls/min (budget)',
    (r) => `${r.steady.detailCallsPerMinute} (${r.steady.detailBudgetPerMinute})`,
  ],
  ['steady: other cloud calls', (r) => String(r.steady.otherCloudCalls)],
  ['steady: apiserver writes/min', (r) => String(sum(r.steady.apiserverWritesPerMinute))],
  ['steady: writes beyond details', (r) => String(r.steady.writesBeyondDetails)],
  ['steady: operator CPU (cores)', (r) => String(r.steady.cpu.operatorCores)],
  ['first reconcile after start (ms)', (r) => String(r.startup.firstReconcileMs)],
  [
    'RSS idle / load peak / steady (MB)',
    (r) => `${r.startup.idleRssMb} / ${r.convergence.peakRssMb} / ${r.steady.rssMb}`,
  ],
  [
    'CPU under load: operator / control plane',
    (r) => `${r.convergence.cpu.operatorCores} / ${r.convergence.cpu.controlPlaneCores}`,
  ],
  ['restart: shutdown / catch-up (ms)', (r) => `${r.restart.shutdownMs} / ${r.restart.catchUpMs}`],
  [
    'restart: quiet after (s) / cloud calls / restart cost',
    (r) => `${r.restart.quietAfterSeconds} / ${sum(r.restart.cloudCalls)} / ${r.restart.restartCalls}`,
  ],
  ['deletion: all gone (s) / per s', (r) => `${r.deletion.seconds} / ${r.deletion.resourcesPerSecond}`],
  ['operator warnings logged', (r) => String(r.operatorWarnings.count)],
];

function table(header: string[], rows: string[][]): string {
  const widths = header.map((_, column) =>
    Math.max(...[header, ...rows].map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join(' │ ');
  return [line(header), widths.map((w) => '─'.repeat(w)).join('─┼─'), ...rows.map(line)].join('\n');
}

function sizesTable(results: BenchResults): string {
  const done = results.sizes.flatMap((outcome) => (outcome.ok ? [outcome.result] : []));
  if (done.length === 0) return 'no size completed';
  return table(
    ['GpuPods', ...done.map((r) => String(r.size))],
    ROWS.map(([label, value]) => [label, ...done.map(value)]),
  );
}

type Convergence = SizeResult['convergence'];
type SideRow = [label: string, value: (c: Convergence) => string];

const byKey = (record: Record<string, number>) =>
  Object.entries(record)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, n]) => `${key} ${n}`)
    .join(', ');
const all = (d: Distribution | undefined) => (d ? `${d.p50} / ${d.p90} / ${d.p99} / ${d.max}` : '-');

const SIDE_ROWS: SideRow[] = [
  ['create → Ready (Pods: Running) p50/p90/p99/max (ms)', (c) => all(c.createToReadyMs)],
  ['burst → Ready (Pods: Running) p50/p90/p99/max (ms)', (c) => all(c.burstToReadyMs)],
  ['create → cloud create p50/p99 (ms)', (c) => pct(c.createToCloudMs)],
  ['apply → all Ready (s)', (c) => String(c.seconds)],
  ['apiserver writes per resource', (c) => String(Math.round(sum(c.apiserverWritesPerResource) * 100) / 100)],
  ['  by verb and resource', (c) => byKey(c.apiserverWritesPerResource)],
  ['cloud calls per resource', (c) => String(Math.round(sum(c.cloudCallsPerResource) * 100) / 100)],
  ['  by operation', (c) => byKey(c.cloudCallsPerResource)],
  [
    'operator CPU per resource (ms) / cores',
    (c) => `${Math.round(cpuPerResource(c) * 10_000) / 10} / ${c.cpu.operatorCores}`,
  ],
  ['operator peak RSS (MB)', (c) => String(c.peakRssMb)],
  ['reconcile errors', (c) => String(c.reconcileErrors)],
];

/** Per size: the convergence phase's GpuPods beside the same workload as Pods on the virtual node. */
function virtualNodeTable(result: SizeResult): string {
  if (!result.virtualNode.ok) return `virtual node at ${result.size} failed: ${result.virtualNode.error}`;
  const virtualNode = result.virtualNode.result;
  return table(
    [`${result.size} resources`, 'GpuPods', `Pods on ${virtualNode.node}`],
    [
      ...SIDE_ROWS.map(([label, value]) => [
        label,
        value(result.convergence),
        value(virtualNode.convergence),
      ]),
      [
        'deletion: resources, all gone (s) / cloud pods left',
        `${result.deletion.count} in ${result.deletion.seconds} / -`,
        `${virtualNode.deletion.count} in ${virtualNode.deletion.seconds} / ${virtualNode.cloudPodsLeft}`,
      ],
      [
        'operator warnings logged',
        String(result.operatorWarnings.count),
        String(virtualNode.operatorWarnings.count),
      ],
    ],
  );
}

function mixedTable(mixed: MixedResult): string {
  const { convergence, steady, deletion } = mixed;
  return table(
    [
      'mixed run',
      Object.entries(mixed.counts)
        .map(([kind, n]) => `${n} ${kind}`)
        .join(', '),
    ],
    [
      ['apply → all Ready (s) / per s', `${convergence.seconds} / ${convergence.resourcesPerSecond}`],
      ['create → Ready p50/p99 (ms)', pct(convergence.createToReadyMs)],
      ['steady: state lists / poll interval', String(steady.stateListCallsPerPollInterval)],
      ['steady: cloud calls/min', JSON.stringify(steady.cloudCallsPerMinute)],
      ['steady: writes beyond details', String(steady.writesBeyondDetails)],
      ['RSS load peak / steady (MB)', `${convergence.peakRssMb} / ${steady.rssMb}`],
      ['deletion: all gone (s)', String(deletion.seconds)],
    ],
  );
}

type IdleRow = [label: string, value: (idle: IdleResult) => string];

/** The rows every idle-check window has, run by the operator or in-process. */
const IDLE_ROWS: IdleRow[] = [
  ['idle-enabled running pods (keys)', (i) => String(i.pods)],
  ['window (s)', (i) => String(i.windowSeconds)],
  ['idle-check calls in the window', (i) => String(i.calls)],
  ['idle-check calls/s (--idle-check-rps)', (i) => `${i.callsPerSecond} (${i.checkRps})`],
  ['budget: rps × window + burst', (i) => String(i.budget.ceiling)],
  [
    'expected / at least',
    (i) =>
      `${i.budget.expected} / ${i.budget.floor ?? 'not judged'}${i.budget.budgetBound ? ' (budget-bound)' : ''}`,
  ],
  ['pods checked / most checks of one pod', (i) => `${i.podsChecked} / ${i.maxChecksOfOnePod}`],
  ['pods paused', (i) => String(i.paused)],
];

function idleRunsTable(runs: readonly IdleRunResult[]): string {
  const rows: Array<[string, (r: IdleRunResult) => string]> = [
    ['load average at start', (r) => r.loadavgAtStart.join(' ')],
    [
      'apply → all Ready (s) / per s',
      (r) => `${r.convergence.seconds} / ${r.convergence.resourcesPerSecond}`,
    ],
    ['wait from last Ready to the window (s)', (r) => String(r.waitSeconds)],
    ...IDLE_ROWS.map(([label, value]): [string, (r: IdleRunResult) => string] => [
      label,
      (r) => value(r.idle),
    ]),
    ['details refreshes in the window', (r) => String(r.detailFetches)],
    ['cloud calls in the window', (r) => JSON.stringify(r.cloudCalls)],
    [
      'operator CPU in the window (cores) / RSS (MB)',
      (r) => `${r.windowCpu.operatorCores} / ${r.windowRssMb}`,
    ],
    ['deletion: all gone (s)', (r) => String(r.deletion.seconds)],
    ['operator warnings logged', (r) => String(r.operatorWarnings.count)],
  ];
  return table(
    ['idle-check run (operator)', ...runs.map((r) => `${r.size} GpuPods`)],
    rows.map(([label, value]) => [label, ...runs.map(value)]),
  );
}

function inProcessTable(runs: ReadonlyArray<{ keys: number; result: InProcessIdleResult }>): string {
  const rows: Array<[string, (r: InProcessIdleResult) => string]> = [
    ...IDLE_ROWS,
    ['shortest time between two checks of one pod (s)', (r) => String(r.shortestGapSeconds ?? '-')],
    [
      'checks of another window / warnings / other calls',
      (r) => `${r.wrongWindows} / ${r.warnings} / ${r.otherCalls}`,
    ],
  ];
  return table(
    ['idle schedule in-process (no apiserver, no operator)', ...runs.map((r) => `${r.keys} keys`)],
    rows.map(([label, value]) => [label, ...runs.map((r) => value(r.result))]),
  );
}

function idleParts(results: BenchResults): string[] {
  const parts: string[] = [];
  const runs = results.idleRuns ?? [];
  const done = runs.flatMap((outcome) => (outcome.ok ? [outcome.result] : []));
  if (done.length > 0) parts.push(idleRunsTable(done));
  for (const outcome of runs)
    if (!outcome.ok)
      parts.push(`idle-check run of ${outcome.size} failed after ${outcome.seconds} s: ${outcome.error}`);
  const inProcess = results.idleInProcess ?? [];
  const measured = inProcess.flatMap((outcome) =>
    outcome.ok ? [{ keys: outcome.keys, result: outcome.result }] : [],
  );
  if (measured.length > 0) parts.push(inProcessTable(measured));
  for (const outcome of inProcess)
    if (!outcome.ok) parts.push(`in-process idle schedule of ${outcome.keys} keys failed: ${outcome.error}`);
  return parts;
}

function imageTable(image: ImageResult): string {
  const ms = (d: Distribution) => `${Math.round(d.p50)} / ${Math.round(d.p90)} / ${Math.round(d.max)}`;
  return table(
    ['image', image.reference],
    [
      ['OCI archive (MB)', String(image.archiveMb)],
      ...image.layers.map((layer, i): [string, string] => [
        `layer ${i + 1}${i === 0 ? ' (base)' : ''}: compressed / unpacked (MB)`,
        `${layer.compressedMb} / ${layer.unpackedMb}`,
      ]),
      [`--help to exit under runc, p50 / p90 / max (ms, ${image.helpMs.count} starts)`, ms(image.helpMs)],
      ['`node -e 0` to exit, the same way (ms)', ms(image.bareNodeMs)],
    ],
  );
}

function imageParts(results: BenchResults): string[] {
  if (!results.image) return [];
  return [
    results.image.ok ? imageTable(results.image.result) : `image measurement failed: ${results.image.error}`,
  ];
}

function churnParts(results: BenchResults): string[] {
  const outcome = results.churn;
  if (!outcome) return [];
  if (!outcome.ok) return [`churn run failed: ${outcome.error}`];
  const r = outcome.result;
  return [
    table(
      ['churn', 'measured'],
      [
        ['cycles (created, Ready, deleted, gone)', `${r.cycles} in ${r.seconds} s (${r.cyclesPerSecond}/s)`],
        ['live resources through it', String(r.live)],
        ['remembered per memory, before', JSON.stringify(r.rememberedBefore)],
        ['remembered per memory, after', JSON.stringify(r.rememberedAfter)],
        ['RSS before / after (MB)', `${r.rssBeforeMb} / ${r.rssAfterMb} (${r.rssGrowthPercent}%)`],
        ['RSS after each wave (MB)', r.rssByWaveMb.join(' ')],
      ],
    ),
  ];
}

function targetsTable(checks: readonly TargetCheck[]): string {
  return table(
    ['', 'scope', 'target', 'measured'],
    checks.map((check) => [check.met ? 'MET' : 'MISSED', check.scope, check.target, check.value]),
  );
}

export function render(results: BenchResults, checks: readonly TargetCheck[]): string {
  const failed = results.sizes.filter((outcome) => !outcome.ok);
  const { machine, settings } = results;
  const parts = [
    [
      `gpucloud-operator benchmark, ${results.startedAt}, ${results.durationSeconds} s`,
      `machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGb} GB, load ${machine.loadavgAtStart.join(' ')}`,
      `CPUs: ${
        settings.cpus === 'shared'
          ? 'shared by every process'
          : `control plane on ${settings.cpus.controlPlane}; operator, simulator and benchmark on ${settings.cpus.operatorSimulatorAndBench}`
      }`,
      `operator: ${settings.operatorBuild} ${settings.operatorFlags.join(' ')}`,
      `NODE_OPTIONS: ${settings.operatorNodeOptions || '(none)'}${
        settings.operatorEnv?.length ? `; environment: ${settings.operatorEnv.join(' ')}` : ''
      }; simulator: ${JSON.stringify(settings.simulator)}`,
    ].join('\n'),
    results.sizes.length > 0 ? sizesTable(results) : '',
    ...results.sizes.flatMap((outcome) => (outcome.ok ? [virtualNodeTable(outcome.result)] : [])),
    ...failed.map((outcome) =>
      outcome.ok ? '' : `size ${outcome.size} failed after ${outcome.seconds} s: ${outcome.error}`,
    ),
    results.mixed?.ok
      ? mixedTable(results.mixed.result)
      : results.mixed
        ? `mixed run failed: ${results.mixed.error}`
        : '',
    ...idleParts(results),
    ...imageParts(results),
    ...churnParts(results),
    ...(checks.length > 0
      ? [targetsTable(checks), `${checks.filter((c) => c.met).length} of ${checks.length} targets met`]
      : []),
  ];
  return parts.filter(Boolean).join('\n\n');
}
