import assert from 'node:assert/strict';
import { Agent } from 'node:https';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { KubeApiError, type KubeClient } from '../../src/kube/client.ts';
import { TENANT_GROUP_VERSION } from '../../src/tenant-api/group.ts';
import { clientAs } from '../support/impersonation.ts';
import { useStack } from '../support/operator.ts';
import { poll } from '../support/until.ts';
import { direct, openFollows, podAndQueues, type TenantWorld, useTenantWorld } from './support.ts';

// The tenant API's edge, as a tenant meets it through the apiserver (and straight to the port where the
// apiserver would hide what the operator answers): every bad parameter is a 400 that names it, the cloud's
// words never reach the tenant, a follow's slot is freed whatever the cloud is doing, and one tenant's
// oversized body does not break another's request on the apiserver's pooled connection (issue 33, 1–7).
const TEAM = 'team-a';
const OTHER = 'team-b';
const stack = useStack({ transitionMs: 50 });
let world: TenantWorld;

const api = (namespace: string, plural: string, name: string, sub: string) =>
  `/apis/${TENANT_GROUP_VERSION}/namespaces/${namespace}/${plural}/${name}/${sub}`;
const LOG = api(TEAM, 'gpupods', 'trainer', 'log');
const METRICS = api(TEAM, 'gpupods', 'trainer', 'metrics');

interface Answer {
  readonly code: number;
  readonly message: string;
}

/** What the apiserver answers `client` for a GET (or POST with `body`): the code and the Status message. */
async function answer(client: KubeClient, path: string, body?: unknown): Promise<Answer> {
  try {
    await client.request(
      z.unknown(),
      body === undefined ? { method: 'GET', path } : { method: 'POST', path, body },
    );
    return { code: 200, message: '' };
  } catch (error) {
    // The Status message alone: the error's own message starts with the path, query and all.
    if (error instanceof KubeApiError)
      return { code: error.status, message: error.message.split(` ${error.reason}: `).slice(1).join() };
    throw error;
  }
}

/** A 400 whose message names `parameter` and says `range`, and carries nothing of the cloud's. */
function assertRefused(got: Answer, parameter: RegExp, range: RegExp): void {
  assert.equal(got.code, 400, got.message);
  assert.match(got.message, parameter);
  assert.match(got.message, range);
  assert.doesNotMatch(got.message, /GPU cloud|query\.|nothing was sent|lines per page/);
}

describe('the edge of the tenant API', () => {
  world = useTenantWorld(stack, {
    flags: ['--tenant-api-streams-per-user', '2'],
    bindings: [
      [TEAM, 'view', 'viewer'],
      [TEAM, 'edit', 'editor'],
      [OTHER, 'edit', 'neighbour'],
    ],
    objects: podAndQueues(TEAM, OTHER),
    served: async (plane) => (await answer(clientAs(plane, 'viewer'), METRICS)).code === 200,
  });

  test('a malformed percent-encoding in the path is a 400 that names it (1)', async () => {
    const viewer = clientAs(stack.plane(), 'viewer');
    const got = await answer(viewer, api(TEAM, 'gpupods', '%FF', 'log'));
    assert.equal(got.code, 400, got.message);
    assert.match(got.message, /"%FF" is not valid percent-encoding/);
    const name = await answer(viewer, api(TEAM, 'gpupods', 'UPPER_case', 'log'));
    assert.equal(name.code, 400, name.message);
    assert.match(name.message, /name "UPPER_case": a Kubernetes name is/);
    const task = await answer(viewer, `${api(TEAM, 'serverlessendpoints', 'queue', 'tasks')}/not-an-id`);
    assert.equal(task.code, 400, task.message);
    assert.match(task.message, /task id "not-an-id": only the characters A-Z a-z 0-9 _/);
  });

  test("every parameter is checked at the edge: a 400 naming it and its range, none of the cloud's words (2, 3, 4)", async () => {
    const viewer = clientAs(stack.plane(), 'viewer');
    const get = (path: string, query: string) => answer(viewer, `${path}?${query}`);
    for (const limit of ['1001', '1000000000000', '0', '-1', '1.5', 'ten'])
      assertRefused(await get(LOG, `limit=${limit}`), /limit/, /from 1 to 1000/);
    assertRefused(await get(LOG, 'sinceSeconds=1000000000000'), /sinceSeconds/, /from 1 to 315360000/);
    assertRefused(await get(LOG, 'keyword='), /keyword/, /must not be empty/);
    assertRefused(await get(LOG, `keyword=${'x'.repeat(257)}`), /keyword/, /at most 256/);
    assertRefused(await get(LOG, 'follow=maybe'), /follow/, /true or false/);
    assertRefused(await get(LOG, 'limit=5&limit=2000'), /limit/, /more than once/);
    assertRefused(await get(LOG, 'tail=5'), /"tail"/, /not a parameter/);
    assertRefused(await get(METRICS, 'window=0s'), /window/, /longer than 0s/);
    assertRefused(await get(METRICS, 'window=91d&step=1d'), /window/, /at most 90d/);
    assertRefused(await get(METRICS, 'window=4h&step=30s'), /window/, /30s: 3h/);
    assertRefused(await get(METRICS, 'step=2m'), /step/, /30s, 5m, 15m, 1h, 4h, 1d/);
    assertRefused(await get(METRICS, 'series=cpu,disk'), /series/, /cpu, gpu, memory, gpuMemory/);
    assertRefused(await get(METRICS, 'series=cpu,cpu'), /series/, /twice/);
    const tasks = api(TEAM, 'serverlessendpoints', 'queue', 'tasks');
    assertRefused(await get(tasks, 'size=101'), /size/, /from 1 to 100/);
    assertRefused(await get(tasks, 'page=0'), /page/, /from 1 to 1000000/);
    assertRefused(await get(tasks, 'status=DONE'), /status/, /PROCESSING/);
    const editor = clientAs(stack.plane(), 'editor');
    const longId = await answer(editor, tasks, { taskId: 'x'.repeat(129), input: {} });
    assertRefused(longId, /taskId/, /at most 128/);
    // The bounds themselves are served.
    assert.equal((await get(LOG, 'limit=1000&sinceSeconds=315360000')).code, 200);
    assert.equal((await get(METRICS, 'window=90d&step=1d')).code, 200);
  });

  test('a cloud failure is a stable message of ours, never the cloud text (2)', async () => {
    const viewer = clientAs(stack.plane(), 'viewer');
    stack.sim().faults.set({ errorRate: 1, operations: ['pods.logs'] });
    try {
      const got = await answer(viewer, LOG);
      assert.equal(got.code, 503, got.message);
      assert.match(got.message, /the GPU cloud is unavailable or busy \(pods\.logs\); retry shortly/);
      assert.doesNotMatch(got.message, /injected|internal error|10002|HTTP 500/);
    } finally {
      stack.sim().faults.reset();
    }
  });

  test("a followed log's slot is freed when its reader goes while the cloud is slow (5)", async () => {
    const viewer = clientAs(stack.plane(), 'viewer');
    stack.sim().faults.set({ latencyMs: 1_500, operations: ['pods.logs'] });
    try {
      // Two follows, each dropped as soon as it is open: the operator is then waiting for the cloud.
      for (let round = 0; round < 2; round++) {
        const readers = [new AbortController(), new AbortController()];
        const opened = readers.map((reader) => viewer.lines(LOG, { follow: true }, reader.signal).next());
        await poll(
          () => openFollows(world.operator()),
          (open) => open === 2,
          'two follows open',
          20_000,
        );
        for (const reader of readers) reader.abort();
        await Promise.allSettled(opened);
        await poll(
          () => openFollows(world.operator()),
          (open) => open === 0,
          'every follow slot freed',
          10_000,
        );
      }
    } finally {
      stack.sim().faults.reset();
    }
    // The user may follow again: no slot was kept.
    const again = new AbortController();
    const first = await viewer.lines(LOG, { follow: true }, again.signal).next();
    assert.equal(first.done, false);
    again.abort();
    await poll(
      () => openFollows(world.operator()),
      (open) => open === 0,
      'the last follow freed',
      10_000,
    );
  });

  test("one tenant's oversized body leaves the apiserver's connection serving another tenant (6)", async () => {
    const tasks = (namespace: string) => api(namespace, 'serverlessendpoints', 'queue', 'tasks');
    const editor = clientAs(stack.plane(), 'editor');
    const neighbour = clientAs(stack.plane(), 'neighbour');
    const huge = { taskId: 'huge', input: { blob: 'x'.repeat(3 * 1024 * 1024) } };
    const larger = { taskId: 'larger', input: { blob: 'x'.repeat(7 * 1024 * 1024) } };
    for (let round = 0; round < 4; round++) {
      const refused = await answer(editor, tasks(TEAM), huge);
      assert.equal(refused.code, 400, refused.message);
      assert.match(refused.message, /the body is larger than 1048576 bytes/);
      const served = await answer(neighbour, tasks(OTHER), { taskId: `next_${round}`, input: {} });
      assert.equal(served.code, 200, served.message);
      // Refused before its body is read (a bad parameter): the sender still gets its 400, not the
      // apiserver's 503 for a connection closed under the body it was writing.
      const early = await answer(editor, `${tasks(TEAM)}?size=0`, larger);
      assert.equal(early.code, 400, early.message);
      assert.match(early.message, /"size": not a parameter of this path/);
    }
  });

  test('straight to the port: after an oversized body is refused, the same connection serves the next request (6)', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const path = api(TEAM, 'serverlessendpoints', 'queue', 'tasks');
      const identity = { user: 'editor' };
      const huge = JSON.stringify({ input: { blob: 'x'.repeat(3 * 1024 * 1024) } });
      const refused = await direct(stack.plane(), world.setup(), {
        path,
        method: 'POST',
        identity,
        body: huge,
        agent,
      });
      assert.equal(refused.code, 400, refused.body);
      const next = await direct(stack.plane(), world.setup(), { path, identity, agent });
      assert.equal(next.code, 200, next.body);
      assert.equal(next.reusedSocket, true, 'the second request went over the same connection');
    } finally {
      agent.destroy();
    }
  });

  test("Kubernetes' standard parameters: timeout as kubectl --request-timeout sends it, pretty (7)", async () => {
    const viewer = clientAs(stack.plane(), 'viewer');
    assert.equal((await answer(viewer, `${LOG}?timeout=30s`)).code, 200);
    assert.equal((await answer(viewer, `${METRICS}?timeout=1m30s&window=10m`)).code, 200);
    assert.equal((await answer(viewer, `${METRICS}?timeout=0s`)).code, 200);
    // The apiserver reads `timeout` itself, and refuses a bad one before it proxies (straight to the port
    // the operator's own 400 is tested below).
    assert.equal((await answer(viewer, `${METRICS}?timeout=soon`)).code, 400);
    const pretty: string[] = [];
    for await (const line of viewer.lines(METRICS, { pretty: true }, AbortSignal.timeout(30_000)))
      pretty.push(line);
    assert.equal(pretty[0], '{');
    assert.match(pretty[1] ?? '', /^ {2}"kind": "GpuPodMetrics",$/);
  });

  test('straight to the port: a bad timeout is a 400 naming it; a request past its timeout is a 504 while the cloud is slow (7)', async () => {
    const identity = { user: 'viewer' };
    const bad = await direct(stack.plane(), world.setup(), { path: `${METRICS}?timeout=soon`, identity });
    assert.equal(bad.code, 400, bad.body);
    assert.match(bad.body, /timeout: must be a duration such as 30s, 1m or 500ms/);
    stack.sim().faults.set({ latencyMs: 3_000, operations: ['metrics.cpu'] });
    try {
      const started = performance.now();
      const late = await direct(stack.plane(), world.setup(), {
        path: `${METRICS}?series=cpu&timeout=500ms`,
        identity,
      });
      assert.equal(late.code, 504, late.body);
      assert.match(late.body, /did not complete within its timeout of 0.5s/);
      assert.ok(performance.now() - started < 2_500, 'answered at the deadline, not after the cloud');
    } finally {
      stack.sim().faults.reset();
    }
  });
});
