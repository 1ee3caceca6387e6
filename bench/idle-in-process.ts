// The idle schedule alone, in the benchmark's process (--idle-check-in-process): for N keys, the
// operator's own parts from the account link down — AccountLinks' idle DetailSchedule with the
// operator's settings, OperatorPause.decide, the GpuPod adapter's idle check and the account's real
// GpuCloudClient — against a fake cloud that answers GPU-utilisation series and counts the calls. No
// apiserver, no informer, no work queue, no operator process: the figures say what the schedule and the
// idle path spend, not how a whole operator with N resources behaves. Every turn the schedule releases
// runs decide() as a reconcile would; every key is decided once first, as the first reconcile of each
// resource tracks it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { ApiCode } from '../src/api/codes.ts';
import { podListItem } from '../src/api/schemas/pods.ts';
import { systemClock } from '../src/lib/clock.ts';
import type { Logger } from '../src/lib/logger.ts';
import { type AccountLink, AccountLinks } from '../src/managed/accounts/account-links.ts';
import {
  AccountRegistry,
  makeAccount,
  openPolicy,
  RotatingKey,
} from '../src/managed/accounts/account-registry.ts';
import { keyOf, type ManagedObject } from '../src/managed/core/external-kind.ts';
import type { ManagedStore } from '../src/managed/core/store.ts';
import type { ManagedWriter } from '../src/managed/core/writer.ts';
import { OperatorPause } from '../src/managed/lifecycle/operator-pause.ts';
import { gpuPodAdapter } from '../src/resources/gpu-pod/adapter.ts';
import type { PodView } from '../src/resources/gpu-pod/details.ts';
import { type GpuPodSpec, GpuPodSpecSchema } from '../src/resources/gpu-pod/schema.ts';
import { API_VERSION } from '../src/resources/kinds.ts';
import { type IdleResult, idleBudget } from './idle-budget.ts';
import { GPU_POD_SPEC, IDLE_STOP, names } from './manifests.ts';
import type { BenchOptions } from './options.ts';
import { sleep } from './parallel.ts';
import { round } from './stats.ts';

/** Turns released before the window opens: the schedule is past its first tick and spending its budget. */
const WARM_UP_MS = 10_000;
const GPU_SERIES = /^\/v2\/metrics\/gpu\/pods\/([^/?]+)$/;
const NAMESPACE = 'idle-in-process';
/** Old enough for every gate of an idle check: created and Ready an hour ago. */
const AGE_MS = 60 * 60_000;

export interface InProcessIdleResult extends IdleResult {
  measuredBy: 'in-process';
  /** Calls the fake cloud got that were not GPU-utilisation series (none expected). */
  otherCalls: number;
  /** Warnings the operator's parts logged (a check that failed to read its series is one). */
  warnings: number;
  /** Idle checks over the whole run (warm-up included) that read another window than forMinutes. */
  wrongWindows: number;
  /** Shortest time between two checks of one pod over the whole run, seconds; undefined with none twice. */
  shortestGapSeconds: number | undefined;
}

interface Check {
  at: number;
  windowMs: number;
}

/** Answers GET /v2/metrics/gpu/pods/{id} with a busy series (60–90%) over the window asked for. */
function fakeCloud(): { server: Server; checks: Map<string, Check[]>; other: { count: number } } {
  const checks = new Map<string, Check[]>();
  const other = { count: 0 };
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://fake');
    const id = request.method === 'GET' ? GPU_SERIES.exec(url.pathname)?.[1] : undefined;
    if (id === undefined) {
      other.count += 1;
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"code":404,"msg":"not found"}');
      return;
    }
    const end = Number(url.searchParams.get('end'));
    const start = Number(url.searchParams.get('start'));
    const list = checks.get(id) ?? [];
    list.push({ at: Date.now(), windowMs: end - start });
    checks.set(id, list);
    const points = [];
    for (let t = Math.ceil(start / 30_000) * 30_000; t <= end; t += 30_000)
      points.push({ timestamp: t, value: 60 + ((t / 30_000) % 30) });
    const data = {
      metric_name: 'gpu_utilization',
      series: [{ labels: { pod_id: id, gpu_show_index: '0' }, data_points: points }],
    };
    const body = { code: ApiCode.Success, message: 'success', data };
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  return { server, checks, other };
}

/** A running pod as the cloud lists it, created an hour ago. */
function podView(index: number, name: string, createdAt: number): PodView {
  return podListItem.parse({
    id: String(100_000 + index),
    orgId: '1',
    applicantId: '1',
    name,
    image: GPU_POD_SPEC.image,
    imageRegistry: '',
    gpuType: GPU_POD_SPEC.gpuType,
    gpuDisplayName: 'L40S',
    gpuCount: GPU_POD_SPEC.gpuCount,
    region: 'us-east-1',
    cloudType: 'SECURE',
    containerVolumeInGb: 50,
    status: 'RUNNING',
    isSpot: false,
    callbackUrl: null,
    createdAt: String(createdAt),
    volumes: [],
    internalIp: '10.0.0.1',
  });
}

/** An idle-enabled GpuPod, Ready for the last hour, as the informer would hold it. */
function resource(index: number, name: string, readySince: string): ManagedObject<GpuPodSpec> {
  return {
    apiVersion: API_VERSION,
    kind: 'GpuPod',
    metadata: {
      namespace: NAMESPACE,
      name,
      uid: `uid-${index}`,
      generation: 1,
      resourceVersion: '1',
    },
    spec: GpuPodSpecSchema.parse({ ...GPU_POD_SPEC, idleStop: { ...IDLE_STOP } }),
    status: {
      id: String(100_000 + index),
      phase: 'RUNNING',
      observedGeneration: 1,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          observedGeneration: 1,
          lastTransitionTime: readySince,
          reason: 'Running',
          message: 'the pod is running',
        },
      ],
    },
  };
}

const refused = () => Promise.reject(new Error('the idle path writes nothing to the apiserver'));
const NO_WRITES: ManagedWriter = {
  patchObject: refused,
  isOwnWrite: () => false,
  forget: () => {},
  size: 0,
  patchStatus: refused,
  deleteObject: refused,
  readSecret: refused,
  writeOwnedSecret: refused,
};

export async function measureIdleInProcess(
  options: BenchOptions,
  keys: number,
  benchLog: Logger,
): Promise<InProcessIdleResult> {
  // The operator's parts log as they would in the operator at --log-level warn: a failed check is a warning.
  const warnings: string[] = [];
  const log = pino(
    { level: 'warn', name: 'in-process' },
    { write: (line: string) => void warnings.push(line) },
  );
  const { server, checks, other } = fakeCloud();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const key = new RotatingKey('bench-in-process-key', async () => 'bench-in-process-key');
  // The operator's account: its default request rate (50/s) and timeout (30 s).
  const account = makeAccount('default', url, key, openPolicy(true), {
    requestTimeoutMs: 30_000,
    requestsPerSecond: 50,
    logger: log,
    registry: new Registry(),
  });
  const accounts = new AccountRegistry({ account, key });
  const now = Date.now();
  const readySince = new Date(now - AGE_MS).toISOString();
  const objects = new Map<string, { mr: ManagedObject<GpuPodSpec>; pod: PodView }>();
  for (const [index, name] of names('idle', keys).entries()) {
    const mr = resource(index, name, readySince);
    objects.set(keyOf(mr), { mr, pod: podView(index, name, now - AGE_MS) });
  }
  const store: ManagedStore = {
    get: (at) => objects.get(`${at.namespace}/${at.name}`)?.mr,
    claimsOn: () => [],
    isLive: () => true,
  };
  let paused = 0;
  let failures = 0;
  const fleet = {
    pausedByOperator: () => {
      paused += 1;
    },
    deadlineExceeded: () => {},
  };
  // A variable, not a literal: the options grow as the operator's pause learns more (budgets read the
  // store and parse specs), and a literal would tie this file to one version of them.
  const pauseOptions = {
    kind: 'GpuPod',
    events: { event: () => {}, forget: () => {} },
    fleet,
    store,
    parseSpec: (raw: unknown) => GpuPodSpecSchema.parse(raw),
    clock: systemClock,
    log,
  };
  const pause = new OperatorPause<GpuPodSpec, PodView>(pauseOptions);
  let link: AccountLink<GpuPodSpec, PodView> | undefined;
  /** One reconcile's part in it: what the operator does with a key the idle schedule releases. */
  const decide = async (at: string) => {
    const entry = objects.get(at);
    if (!entry || !link) return;
    try {
      await pause.decide(entry.mr, entry.pod, link);
    } catch (error) {
      failures += 1;
      benchLog.warn({ err: error, key: at }, 'in-process idle decide failed');
    }
  };
  const links = new AccountLinks<GpuPodSpec, PodView>({
    // Creates nothing: nothing to tell.
    events: { event: () => {}, forget: () => {} },
    adapterFor: (client) => gpuPodAdapter(client),
    accounts,
    store,
    writer: NO_WRITES,
    settings: {
      pollIntervalMs: options.pollInterval * 1000,
      refreshMinIntervalMs: 1000,
      detailsCallsPerSecond: options.detailsRps,
      detailsIntervalMs: options.detailsInterval * 1000,
      idleChecksPerSecond: options.idleCheckRps,
      idleCheckIntervalMs: options.idleCheckInterval * 1000,
      creation: { graceMs: 60_000, skewMs: 5 * 60_000 },
    },
    mayAct: () => true,
    wake: () => {},
    wakeKey: (at) => void decide(at),
    clock: systemClock,
    log,
  });
  try {
    const first = objects.values().next().value;
    if (!first) throw new Error('no keys');
    link = links.linkFor(first.mr);
    const schedule = link.idle;
    if (!schedule) throw new Error('the GpuPod link has no idle schedule');
    // Only the idle schedule runs: the cloud cache's lists and the details schedule are not started.
    schedule.start();
    for (const at of objects.keys()) await decide(at);
    await sleep(WARM_UP_MS);
    const began = Date.now();
    await sleep(options.idleCheckWindow * 1000);
    const ended = Date.now();
    schedule.stop();
    const inWindow = [...checks.values()].map(
      (list) => list.filter((check) => check.at >= began && check.at < ended).length,
    );
    const calls = inWindow.reduce((sum, n) => sum + n, 0);
    const windowSeconds = round((ended - began) / 1000);
    const all = [...checks.values()];
    const gaps = all.flatMap((list) => list.slice(1).map((check, i) => check.at - (list[i]?.at ?? 0)));
    if (failures > 0) throw new Error(`${failures} decide() calls failed`);
    if (warnings.length > 0)
      benchLog.warn({ keys, first: warnings[0] }, `${warnings.length} warnings in-process`);
    return {
      measuredBy: 'in-process',
      pods: keys,
      windowSeconds,
      checkRps: options.idleCheckRps,
      checkIntervalSeconds: options.idleCheckInterval,
      forMinutes: IDLE_STOP.forMinutes,
      calls,
      callsPerSecond: round(calls / windowSeconds, 3),
      podsChecked: inWindow.filter((n) => n > 0).length,
      maxChecksOfOnePod: Math.max(0, ...inWindow),
      budget: idleBudget(keys, windowSeconds, options.idleCheckRps, options.idleCheckInterval),
      paused,
      otherCalls: other.count,
      warnings: warnings.length,
      wrongWindows: all.flat().filter((check) => check.windowMs !== IDLE_STOP.forMinutes * 60_000).length,
      shortestGapSeconds: gaps.length > 0 ? round(Math.min(...gaps) / 1000, 2) : undefined,
    };
  } finally {
    links.stop();
    await accounts.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
