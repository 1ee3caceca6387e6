// A fuzz of the tenant API's edge, in the manner of the chaos suite's admission fuzz: random paths and
// encodings, queries, methods and bodies (sizes, slow senders), followed logs dropped mid-stream, through
// the apiserver as a tenant and straight to the operator's port, while the cloud is healthy, slow or
// failing. Every answer is judged against the invariants below; the figures are what docs/security.md
// records. Seeded: a failing run is replayed with its seed.
import { request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { Random } from '../../chaos/random.ts';
import { KubeApiError, type KubeClient } from '../../src/kube/client.ts';
import type { ControlPlane } from '../../src/local/controlplane.ts';
import { LOCAL_TENANT_SERVICE } from '../../src/local/tenant-api.ts';
import type { FaultPatch } from '../../src/sim/faults.ts';
import type { RunningSimulator } from '../../src/sim/index.ts';
import { TENANT_GROUP_VERSION } from '../../src/tenant-api/group.ts';
import type { TenantApiSetup } from './support.ts';

export interface FuzzProfile {
  readonly name: 'short' | 'long';
  readonly requests: number;
  /** Requests in flight at once. */
  readonly workers: number;
  /** Requests per cloud phase (healthy, slow, failing, in turn). */
  readonly perPhase: number;
}

export const FUZZ_PROFILES: Readonly<Record<FuzzProfile['name'], FuzzProfile>> = {
  short: { name: 'short', requests: 360, workers: 4, perPhase: 120 },
  long: { name: 'long', requests: 12_000, workers: 6, perPhase: 1_000 },
};

type CloudPhase = 'healthy' | 'slow' | 'failing';
const TENANT_CALLS = ['pods.logs', 'metrics.cpu', 'metrics.gpu', 'metrics.memory', 'metrics.gpuMemory'];
const PHASES: readonly { readonly phase: CloudPhase; readonly faults: FaultPatch }[] = [
  { phase: 'healthy', faults: {} },
  { phase: 'slow', faults: { latencyMs: 400, operations: TENANT_CALLS } },
  { phase: 'failing', faults: { errorRate: 0.6, operations: TENANT_CALLS } },
];

export interface FuzzWorld {
  readonly plane: ControlPlane;
  readonly sim: RunningSimulator;
  readonly setup: TenantApiSetup;
  readonly namespace: string;
  readonly other: string;
  /**
   * A client of the tenant's users (and of `neighbour`, another namespace's tenant, whose requests must be
   * served throughout) through the apiserver. A new one for each call: a client that resets streams one
   * after another on one HTTP/2 connection is cut off by the apiserver (Go's rapid-reset guard,
   * ENHANCE_YOUR_CALM), with every request on it.
   */
  client(user: 'viewer' | 'editor' | 'neighbour'): KubeClient;
  /** The open-follows gauge. */
  openFollows(): Promise<number>;
  /** Words that must never reach a tenant: the API key, and the cloud's own messages. */
  readonly forbidden: readonly (string | RegExp)[];
}

export interface FuzzReport {
  readonly seed: number;
  readonly profile: FuzzProfile['name'];
  readonly requests: number;
  readonly byRoute: Record<string, number>;
  readonly byCode: Record<string, number>;
  readonly byPhase: Record<string, number>;
  /** Requests whose reader went while the answer came (followed logs, mostly). */
  readonly readersGone: number;
  readonly slowBodies: number;
  readonly neighbourRequests: number;
  readonly seconds: number;
  /** This process's (the operator runs in it) resident memory and active handles, before and after. */
  readonly rssMiB: readonly [number, number];
  readonly activeResources: readonly [number, number];
  readonly violations: readonly string[];
}

interface Answer {
  readonly code: number;
  readonly text: string;
}

/** The test's process, the operator's included, stays far below this (about 600 MiB over a long run). */
const MAX_RSS_BYTES = 3 * 2 ** 30;

/** Our messages for a 5xx that is the cloud's failure, or a deadline the tenant set itself. */
const OURS_5XX =
  /the GPU cloud (is unavailable or busy|did not answer|refused|answered)|did not complete within (its|the requested|the allotted) timeout|request did not complete within/;

export async function fuzzEdge(world: FuzzWorld, profile: FuzzProfile, seed: number): Promise<FuzzReport> {
  const random = new Random(seed);
  const started = performance.now();
  const before = resources();
  const violations: string[] = [];
  const count = (into: Record<string, number>, key: string) => {
    into[key] = (into[key] ?? 0) + 1;
  };
  const byRoute: Record<string, number> = {};
  const byCode: Record<string, number> = {};
  const byPhase: Record<string, number> = {};
  let readersGone = 0;
  let slowBodies = 0;
  let neighbourRequests = 0;
  let phase: CloudPhase = 'healthy';

  // Another tenant, in another namespace, asks all along: each request must be served.
  const stopNeighbour = new AbortController();
  const neighbour = (async () => {
    const path = api(world.other, 'serverlessendpoints', 'queue', 'tasks');
    const client = world.client('neighbour');
    while (!stopNeighbour.signal.aborted) {
      const got = await viaApiserver(client, { method: 'GET', path });
      neighbourRequests++;
      if (got.code !== 200) violations.push(`neighbour GET ${path}: ${got.code} ${got.text.slice(0, 200)}`);
      await sleep(50);
    }
  })();

  let sent = 0;
  const inFlight = new Set<string>();
  // Stop before the machine does, naming the cases in flight when the memory ran away.
  const watchdog = setInterval(() => {
    if (process.memoryUsage.rss() <= MAX_RSS_BYTES) return;
    violations.push(
      `memory past ${MAX_RSS_BYTES >> 20} MiB after ${sent} requests, in flight: ${[...inFlight].join(' | ')}`,
    );
    sent = profile.requests;
  }, 500);
  try {
    for (let round = 0; sent < profile.requests; round++) {
      const current = PHASES[round % PHASES.length];
      if (!current) break;
      phase = current.phase;
      world.sim.faults.reset();
      world.sim.faults.set(current.faults);
      const until = Math.min(profile.requests, sent + profile.perPhase);
      await Promise.all(
        Array.from({ length: profile.workers }, async (_, worker) => {
          const draw = random.fork(`round ${round} worker ${worker}`);
          while (sent < until) {
            sent++;
            const fuzzCase = drawCase(draw, world);
            const during = phase;
            const described = describe(fuzzCase);
            inFlight.add(described);
            const got = await send(world, fuzzCase).finally(() => inFlight.delete(described));
            count(byRoute, fuzzCase.route);
            count(byCode, String(got.code));
            count(byPhase, during);
            if (fuzzCase.dropAfterMs !== undefined) readersGone++;
            if (fuzzCase.slowBody) slowBodies++;
            const broken = judge(got, world, during !== 'healthy' || phase !== 'healthy');
            if (broken) violations.push(`${broken}: ${described} → ${got.code} ${got.text.slice(0, 200)}`);
          }
        }),
      );
      // Every follow of the phase is released once its reader has gone, whatever the cloud did.
      world.sim.faults.reset();
      const open = await settle(world.openFollows, 15_000);
      if (open !== 0)
        violations.push(`after ${current.phase} phase ${round}: ${open} follow slots still held`);
    }
  } finally {
    clearInterval(watchdog);
    stopNeighbour.abort();
    await neighbour;
    world.sim.faults.reset();
  }
  return {
    seed,
    profile: profile.name,
    requests: sent,
    byRoute,
    byCode,
    byPhase,
    readersGone,
    slowBodies,
    neighbourRequests,
    seconds: Math.round((performance.now() - started) / 100) / 10,
    rssMiB: [before.rssMiB, resources().rssMiB],
    activeResources: [before.active, resources().active],
    violations,
  };
}

function resources(): { rssMiB: number; active: number } {
  return {
    rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
    active: process.getActiveResourcesInfo().length,
  };
}

/** What is wrong with an answer, if anything. */
function judge(got: Answer, world: FuzzWorld, cloudDisturbed: boolean): string | undefined {
  for (const word of world.forbidden) {
    if (typeof word === 'string' ? got.text.includes(word) : word.test(got.text))
      return `forbidden text ${String(word)}`;
  }
  if (got.code === 0) return 'no answer';
  if (got.code < 500) return undefined;
  if (!OURS_5XX.test(got.text)) return 'a 5xx that is not the cloud failing nor a deadline';
  if (!cloudDisturbed && !/timeout/.test(got.text)) return 'a cloud failure while the cloud was healthy';
  return undefined;
}

async function settle(read: () => Promise<number>, ms: number): Promise<number> {
  const deadline = performance.now() + ms;
  let last = await read();
  while (last !== 0 && performance.now() < deadline) {
    await sleep(100);
    last = await read();
  }
  return last;
}

const api = (namespace: string, plural: string, name: string, sub: string) =>
  `/apis/${TENANT_GROUP_VERSION}/namespaces/${namespace}/${plural}/${name}/${sub}`;

interface FuzzCase {
  readonly route: 'apiserver' | 'port';
  readonly user: 'viewer' | 'editor';
  readonly method: string;
  readonly path: string;
  readonly body?: string | undefined;
  /** Sent in pieces with pauses between them (straight to the port only). */
  readonly slowBody?: boolean | undefined;
  /** The reader goes this long after the answer starts (a followed log). */
  readonly dropAfterMs?: number | undefined;
}

function describe(fuzzCase: FuzzCase): string {
  const body =
    fuzzCase.body === undefined
      ? ''
      : ` body ${fuzzCase.body.length} bytes${fuzzCase.slowBody ? ' slowly' : ''}`;
  return `${fuzzCase.route} ${fuzzCase.user} ${fuzzCase.method} ${fuzzCase.path.slice(0, 300)}${body}`;
}

const NAMES = ['%FF', '%00', 'a%2Fb', 'UPPER', 'x'.repeat(300), '%E2%82', '%F0%9F%92%A5', 'missing', 'a.b'];
// Only straight to the port: the apiserver's HTTP server resets a stream whose path has a `%` without two
// hex digits, and a client normalises dot segments away before they are sent.
const PORT_ONLY_NAMES = ['%', '..', '%2E%2E', '.'];
/** Values each subresource takes: half the cases carry only these, so that the cloud is reached. */
const VALID: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>> = {
  log: { limit: ['1', '5', '1000'], sinceSeconds: ['60', '3600'], keyword: ['started', 'image'] },
  metrics: { window: ['10m', '1h', '6h'], step: ['5m'], series: ['cpu', 'gpu,memory'] },
  tasks: { status: ['SUCCESS'], page: ['1', '2'], size: ['1', '100'] },
  any: { timeout: ['30s', '5s'], pretty: ['true', '0'] },
};
const PARAMETERS: Readonly<Record<string, readonly string[]>> = {
  follow: ['true', 'false', '1', 'maybe', ''],
  limit: ['1', '5', '1000', '1001', '0', '-5', '1000000000000', '1.5', 'ten', '%FF'],
  sinceSeconds: ['60', '315360000', '315360001', '1000000000000', '0', 'x'],
  keyword: ['started', 'image', '', 'x'.repeat(300), '%00', '💥', "'; DROP TABLE pods;--"],
  window: ['10m', '1h', '0s', '91d', '4h', '999999999999d', 'abc', '-1h'],
  step: ['30s', '5m', '1d', '2m', ''],
  series: ['cpu', 'cpu,gpu', 'cpu,cpu', 'disk', '', 'cpu,gpu,memory,gpuMemory'],
  status: ['SUCCESS', 'DONE', ''],
  page: ['1', '2', '0', '1000001'],
  size: ['1', '100', '101', '0'],
  timeout: ['30s', '500ms', '1m30s', '0', '-1s', 'soon', '1h'],
  pretty: ['true', '1', 'yes'],
  tail: ['5'],
  watch: ['true'],
};

const FOLLOWS = ['1', 't', 'T', 'TRUE', 'true', 'True'];

function drawCase(random: Random, world: FuzzWorld): FuzzCase {
  const route = random.chance(0.5) ? 'apiserver' : 'port';
  const target = random.pick([
    ['gpupods', 'trainer', 'log'],
    ['gpupods', 'trainer', 'log'],
    ['gpupods', 'trainer', 'metrics'],
    ['serverlessendpoints', 'queue', 'tasks'],
    ['serverlessendpoints', 'queue', 'tasks/never_sent'],
    ['serverlessendpoints', 'queue', 'tasks/not-an-id'],
    ['gpupods', 'trainer', 'exec'],
    ['gpuvms', 'box', 'log'],
  ] as const);
  const [plural, ownName, sub] = target;
  const names = route === 'port' ? [...NAMES, ...PORT_ONLY_NAMES] : NAMES;
  const name = random.chance(0.75) ? ownName : random.pick(names);
  const namespace = random.chance(0.85)
    ? world.namespace
    : random.pick([world.other, 'Bad_NS', '%FF', 'x'.repeat(70)]);
  const query = new URLSearchParams();
  if (sub === 'log' && random.chance(0.35)) query.set('follow', 'true');
  const pool = random.chance(0.5) ? { ...VALID[sub.split('/')[0] ?? ''], ...VALID.any } : PARAMETERS;
  for (let i = random.int(0, 3); i > 0; i--) {
    const key = random.pick(Object.keys(pool));
    query.set(key, random.pick(pool[key] ?? ['']));
  }
  if (random.chance(0.05)) query.append('limit', '5');
  const method = random.chance(0.8)
    ? sub === 'tasks' && random.chance(0.5)
      ? 'POST'
      : 'GET'
    : random.pick(['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
  const search = query.size > 0 ? `?${query}` : '';
  const body = method === 'GET' ? undefined : drawBody(random);
  return {
    route,
    user: method === 'GET' ? random.pick(['viewer', 'editor']) : 'editor',
    method,
    path: `${api(namespace, plural, name, sub)}${search}`,
    body,
    slowBody: route === 'port' && body !== undefined && random.chance(0.3),
    // A follow, however the query spells it, has a reader that goes: one that stayed would never end.
    dropAfterMs:
      FOLLOWS.includes(query.get('follow') ?? '') || random.chance(0.1) ? random.int(0, 600) : undefined,
  };
}

function drawBody(random: Random): string | undefined {
  const id = `fuzz_${random.int(0, 1e9)}`;
  if (random.chance(0.1)) return undefined;
  return random.pick([
    JSON.stringify({ taskId: id, input: { prompt: 'a lighthouse' } }),
    JSON.stringify({ input: {} }),
    JSON.stringify({ taskId: 'not-an-id', input: {} }),
    JSON.stringify({ taskId: 'x'.repeat(200), input: {} }),
    JSON.stringify({ taskId: id, input: {}, extra: true }),
    JSON.stringify({ taskId: id, webhook: 'ftp://x', input: {} }),
    '{"taskId": ',
    'null',
    '[]',
    JSON.stringify({ input: { blob: 'x'.repeat(random.int(1_048_000, 1_600_000)) } }),
  ]);
}

async function send(world: FuzzWorld, fuzzCase: FuzzCase): Promise<Answer> {
  if (fuzzCase.route === 'apiserver') {
    const client = world.client(fuzzCase.user);
    try {
      return await viaApiserver(client, fuzzCase);
    } finally {
      client.resetConnections();
    }
  }
  return viaPort(world, fuzzCase);
}

/** Through the apiserver as the tenant, with the kube client every tool of ours uses. */
async function viaApiserver(
  client: KubeClient,
  fuzzCase: Pick<FuzzCase, 'method' | 'path' | 'body' | 'dropAfterMs'>,
): Promise<Answer> {
  const reader = new AbortController();
  const drop =
    fuzzCase.dropAfterMs === undefined ? undefined : setTimeout(() => reader.abort(), fuzzCase.dropAfterMs);
  const signal = AbortSignal.any([reader.signal, AbortSignal.timeout(30_000)]);
  let text = '';
  try {
    if (fuzzCase.method === 'GET') {
      for await (const line of client.lines(fuzzCase.path, {}, signal)) text += `${line}\n`;
      return { code: 200, text };
    }
    const method = (['POST', 'PUT', 'DELETE'] as const).find((each) => each === fuzzCase.method) ?? 'PATCH';
    const body = fuzzCase.body === undefined ? undefined : jsonOrText(fuzzCase.body);
    text = JSON.stringify(await client.request(z.unknown(), { method, path: fuzzCase.path, body, signal }));
    return { code: 200, text };
  } catch (error) {
    if (error instanceof KubeApiError)
      return { code: error.status, text: error.message.split(` ${error.reason}: `).slice(1).join() };
    // The reader left on purpose: what it read so far is judged.
    if (reader.signal.aborted) return { code: 200, text };
    return { code: 0, text: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(drop);
  }
}

/** The kube client sends JSON: a body that is not is sent as a JSON string. */
function jsonOrText(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

/** Straight to the operator's port, as the apiserver dials it, with the front proxy's pair. */
function viaPort(world: FuzzWorld, fuzzCase: FuzzCase): Promise<Answer> {
  const proxy = world.plane.frontProxy;
  return new Promise((resolve) => {
    let text = '';
    let code = 0;
    const req = request({
      host: '127.0.0.1',
      port: world.setup.port,
      path: fuzzCase.path,
      method: fuzzCase.method,
      servername: `${LOCAL_TENANT_SERVICE.name}.${LOCAL_TENANT_SERVICE.namespace}.svc`,
      ca: world.setup.caPem,
      cert: proxy.certPem,
      key: proxy.keyPem,
      headers: {
        'X-Remote-User': fuzzCase.user,
        'X-Remote-Group': 'system:authenticated',
        ...(fuzzCase.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      timeout: 30_000,
    });
    const done = () => resolve({ code, text });
    req.on('response', (res) => {
      code = res.statusCode ?? 0;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', done);
      res.on('close', done);
      if (fuzzCase.dropAfterMs !== undefined) setTimeout(() => req.destroy(), fuzzCase.dropAfterMs);
    });
    // The server may close a connection whose body it refused: what it answered first is what counts.
    req.on('error', done);
    req.on('timeout', () => req.destroy());
    writeBody(req, fuzzCase).catch(done);
  });
}

async function writeBody(req: ReturnType<typeof request>, fuzzCase: FuzzCase): Promise<void> {
  const body = fuzzCase.body ?? '';
  if (!fuzzCase.slowBody) {
    req.end(body);
    return;
  }
  // A slow sender: the body in three pieces, with pauses between them.
  const third = Math.ceil(body.length / 3);
  for (let at = 0; at < body.length; at += third) {
    if (req.destroyed) return;
    req.write(body.slice(at, at + third));
    await sleep(150);
  }
  req.end();
}
