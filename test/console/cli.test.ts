import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { dump, load } from 'js-yaml';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { collectionPath, objectPath, secrets } from '../../src/kube/resource-type.ts';
import { SKIP_RECONCILE } from '../../src/managed/core/annotations.ts';
import { grantTenant } from '../support/impersonation.ts';
import {
  API_KEY,
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';

// `kubectl gpucloud ...`, as a user runs it: kubectl finds the plugin on the PATH (with the pinned Node 24
// first on it, as the system Node is 20), the CLI reads resources through the kubeconfig and calls the
// simulator over HTTP. Exit codes and error lines are part of what is checked.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NS = 'cli';
const stack = useStack();
let operator: RunningOperator;
let dir: string;
let podId: string;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** kubectl finds the plugin on the PATH, with the pinned Node first on it. */
function cliEnv() {
  return {
    PATH: [join(ROOT, 'bin'), dirname(process.execPath), dir, process.env.PATH].join(delimiter),
    HOME: dir,
    KUBECONFIG: stack.plane().kubeconfigPath,
    GPUCLOUD_API_URL: stack.sim().url,
    GPUCLOUD_API_KEY: API_KEY,
  };
}

function kubectl(args: string[], env: Record<string, string | undefined> = {}, stdin?: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(
      '/usr/bin/kubectl',
      ['gpucloud', ...args],
      { env: { ...cliEnv(), ...env } as NodeJS.ProcessEnv },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (stdin !== undefined) child.stdin?.end(stdin);
    else child.stdin?.end();
  });
}

/** Reads of pod `id`'s log the simulator answered so far. */
const logReads = (id: string) =>
  stack
    .sim()
    .calls.log()
    .filter((call) => call.operation === 'pods.logs' && call.params.id === id).length;

/**
 * Runs a following command until it has printed `lines` lines and the cloud has answered five more reads
 * of the log after that, then stops it: `exited` says whether it had stopped on its own before.
 */
async function follow(
  args: string[],
  lines: number,
): Promise<{ stdout: string; stderr: string; exited?: number }> {
  const child = spawn('/usr/bin/kubectl', ['gpucloud', ...args], { env: cliEnv() as NodeJS.ProcessEnv });
  let stdout = '';
  let stderr = '';
  let exited: number | undefined;
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const closed = new Promise<void>((resolve) =>
    child.on('close', (code) => {
      exited ??= code ?? -1;
      resolve();
    }),
  );
  child.stdin.end();
  await poll(
    async () => exited !== undefined || stdout.trim().split('\n').length >= lines,
    (done) => done,
    `${lines} lines of ${args.join(' ')}`,
    60_000,
  );
  const reads = logReads(podId);
  await poll(
    async () => exited !== undefined || logReads(podId) >= reads + 5,
    (done) => done,
    'five more reads of the log',
    60_000,
  );
  const result = { stdout, stderr, ...(exited === undefined ? {} : { exited }) };
  child.kill();
  await closed;
  return result;
}

const json = (ran: Ran) => {
  assert.equal(ran.code, 0, ran.stderr);
  return JSON.parse(ran.stdout) as unknown;
};

describe('the gpucloud CLI as a kubectl plugin', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpucloud-cli-'));
    await stack.cluster().ensureNamespace(NS);
    operator = await startOperator(stack.plane(), stack.sim());
    const cluster = stack.cluster();
    await cluster.create(
      resources.gpuPod,
      NS,
      manifests.gpuPod('notebook', {
        expose: [{ port: 8888 }],
        initializationCommand: 'pip install jupyterlab',
      }),
    );
    await cluster.create(resources.gpuVm, NS, manifests.gpuVm('box'));
    await cluster.create(resources.serverlessEndpoint, NS, manifests.serverlessEndpoint('queue'));
    const [pod] = await Promise.all([
      cluster.waitFor(resources.gpuPod, NS, 'notebook', isReady(), 'Ready'),
      cluster.waitFor(resources.gpuVm, NS, 'box', isReady(), 'Ready'),
      cluster.waitFor(resources.serverlessEndpoint, NS, 'queue', isReady(), 'Ready'),
    ]);
    podId = String(pod?.status?.id);
  });
  after(async () => {
    await operator.stop();
  });

  test('vm-types lists every VM type of the cloud, cheapest first, as a table or JSON', async () => {
    const types = json(await kubectl(['vm-types', '-o', 'json'])) as Array<{
      vmTypeId: number;
      pricePerHour: string;
    }>;
    const client = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    const cloud = (await client.vms.types()).flatMap(({ regions }) => regions.flatMap((r) => r.types));
    await client.close();
    assert.equal(types.length, cloud.length);
    const prices = types.map((type) => Number(type.pricePerHour));
    assert.deepEqual(
      prices,
      prices.toSorted((a, b) => a - b),
    );
    const table = await kubectl(['vm-types']);
    assert.match(table.stdout.split('\n')[0] ?? '', /^VM TYPE\s+GPU\s+GPUS\s+REGION\s+PRICE\/H/);
  });

  test('offers filter by GPU and sort by price per GPU-hour; YAML works too', async () => {
    const found = json(await kubectl(['offers', '--gpu', 'NVIDIA L40S', '-o', 'json'])) as Array<{
      gpuType: string;
      pricePerGpuPerHour: string;
    }>;
    assert.ok(found.length > 0);
    assert.ok(found.every((offer) => offer.gpuType === 'NVIDIA L40S'));
    const prices = found.map((offer) => Number(offer.pricePerGpuPerHour));
    assert.deepEqual(
      prices,
      prices.toSorted((a, b) => a - b),
    );
    const yaml = await kubectl(['offers', '--gpu', 'NVIDIA L40S', '--spot', '-o', 'yaml']);
    assert.ok((load(yaml.stdout) as Array<{ isSpot: boolean }>).every((offer) => offer.isSpot));
  });

  test('offers -f: the offers a placed GpuPod accepts, in the order placement tries them, and its pick', async () => {
    const manifest = dump(
      manifests.gpuPod('flexible', {
        gpuType: undefined,
        regions: ['us-east-1'],
        placement: { gpuTypes: ['NVIDIA H100 80GB HBM3', 'NVIDIA L40S'], spot: 'Preferred' },
      }),
    );
    const ran = await kubectl(['offers', '-f', '-', '-o', 'json'], {}, manifest);
    assert.equal(ran.code, 0, ran.stderr);
    const [pod] = z
      .array(
        z.object({
          name: z.string(),
          offers: z.array(z.object({ gpuType: z.string(), spot: z.boolean(), pricePerGpuHour: z.number() })),
        }),
      )
      .parse(JSON.parse(ran.stdout));
    // Spot first (preferred), each cheapest first: L40S 0.59, H100 1.79, then L40S 0.99, H100 2.99.
    assert.deepEqual(
      pod?.offers.map(
        (offer) => `${offer.gpuType} ${offer.spot ? 'spot' : 'on-demand'} ${offer.pricePerGpuHour}`,
      ),
      [
        'NVIDIA L40S spot 0.59',
        'NVIDIA H100 80GB HBM3 spot 1.79',
        'NVIDIA L40S on-demand 0.99',
        'NVIDIA H100 80GB HBM3 on-demand 2.99',
      ],
    );
    const table = await kubectl(['offers', '-f', '-'], {}, manifest);
    assert.match(
      table.stdout,
      /flexible\s+1\s+NVIDIA L40S\s+us-east-1\s+true\s+0\.5900\s+pick: NVIDIA L40S spot in us-east-1/,
    );
    const none = await kubectl(['offers', '-f', '-'], {}, dump(manifests.gpuPod('fixed')));
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no GpuPod with spec\.placement in the manifests/);
  });

  test('logs of a pod by its resource name, limited', async () => {
    const whole = await kubectl(['logs', 'gpupod/notebook', '-n', NS]);
    assert.equal(whole.code, 0, whole.stderr);
    const lines = whole.stdout.trim().split('\n');
    // The image pulled, the initialization command, the port, the start: longer than the limit.
    assert.equal(lines.length, 5, whole.stdout);
    assert.match(lines[0] ?? '', /^\d{4}-\d{2}-\d{2}T\S+ pulling image ubuntu:24\.04$/);
    const ran = await kubectl(['logs', 'gpupod/notebook', '-n', NS, '--limit', '3']);
    assert.equal(ran.code, 0, ran.stderr);
    assert.deepEqual(ran.stdout.trim().split('\n'), lines.slice(0, 3), 'the first three lines');
  });

  test('metrics of a pod the cloud has no sample of yet say so and exit 3, until its first sample', async () => {
    // The simulator samples a pod at whole steps (30 s) after its creation, as the cloud does: create the
    // pod early in a step, so that it is Ready and read before the step ends, with no sample in the cloud.
    const STEP = 30_000;
    if (Date.now() % STEP > 10_000) await sleep(STEP - (Date.now() % STEP) + 200);
    const stepEnds = Math.ceil(Date.now() / STEP) * STEP;
    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, NS, manifests.gpuPod('fresh'));
    await cluster.waitFor(resources.gpuPod, NS, 'fresh', isReady(), 'Ready');
    const early = await kubectl(['metrics', 'gpupod/fresh', '-n', NS]);
    const asJson = await kubectl(['metrics', 'gpupod/fresh', '-n', NS, '-o', 'json']);
    assert.ok(Date.now() < stepEnds, 'read within the step the pod was created in');
    for (const ran of [early, asJson]) {
      assert.equal(ran.code, 3, `${ran.stdout}${ran.stderr}`);
      assert.equal(ran.stdout, '', 'no table of empty series');
      assert.match(
        ran.stderr,
        /^error: the cloud has no metric samples for GpuPod cli\/fresh in the last 1h yet: it samples a pod once every 30s, the first up to 30s after the pod starts running, .*try again shortly\n$/,
      );
    }
    const later = await poll(
      () => kubectl(['metrics', 'gpupod/fresh', '-n', NS, '-o', 'json']),
      (ran) => ran.code !== 3,
      'the first metric sample',
      STEP + 15_000,
    );
    const data = json(later) as { series: Array<{ points: unknown[] }> };
    assert.ok(data.series.some((series) => series.points.length > 0));
  });

  test('metrics of a pod: every series with a sparkline, and storage', async () => {
    // The simulator samples every 30 s from the pod's start: wait for two samples in the window.
    await poll(
      () => kubectl(['metrics', 'gpod/notebook', '-n', NS, '-o', 'json']),
      (ran) =>
        ran.code === 0 &&
        (JSON.parse(ran.stdout) as { series: Array<{ metric: string; points: unknown[] }> }).series.some(
          (series) => series.metric === 'memory_usage' && series.points.length >= 2,
        ),
      'two metric samples',
      90_000,
    );
    const ran = await kubectl(['metrics', 'gpod/notebook', '-n', NS, '--window', '10m', '--step', '30s']);
    assert.equal(ran.code, 0, ran.stderr);
    for (const metric of [
      'cpu_usage',
      'gpu_utilization',
      'memory_usage',
      'gpu_memory',
      'storage_used_bytes',
    ]) {
      assert.match(ran.stdout, new RegExp(metric));
    }
    assert.match(ran.stdout, /[▁▂▃▄▅▆▇█]{2}/);
  });

  test('tasks: submit from stdin with a chosen id, get, count, list, and watch until SUCCESS', async () => {
    const submitted = json(
      await kubectl(
        ['tasks', 'submit', 'sle/queue', '-n', NS, '-f', '-', '--task-id', 'cli_task_1', '-o', 'json'],
        {},
        '{"prompt":"hi"}',
      ),
    ) as { taskId: string };
    assert.equal(submitted.taskId, 'cli_task_1');
    const watched = json(
      await kubectl([
        'tasks',
        'watch',
        'sle/queue',
        'cli_task_1',
        '-n',
        NS,
        '--poll-ms',
        '100',
        '-o',
        'json',
      ]),
    ) as { status: string; output: unknown };
    assert.equal(watched.status, 'SUCCESS');
    const got = json(await kubectl(['tasks', 'get', 'sle/queue', 'cli_task_1', '-n', NS, '-o', 'json'])) as {
      input: unknown;
    };
    assert.deepEqual(got.input, { prompt: 'hi' });
    const counts = json(await kubectl(['tasks', 'count', 'sle/queue', '-n', NS, '-o', 'json'])) as Record<
      string,
      number
    >;
    assert.ok((counts.success ?? 0) >= 1);
    const listed = json(await kubectl(['tasks', 'list', 'sle/queue', '-n', NS, '-o', 'json'])) as Array<{
      taskId: string;
    }>;
    assert.ok(listed.some((task) => task.taskId === 'cli_task_1'));
    const refused = await kubectl(['tasks', 'submit', 'sle/queue', '-n', NS, '-f', '-'], {}, 'not json');
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /not JSON/);
  });

  test('tasks submit -f FILE (--file) reads the input from the file, not standard input', async () => {
    const file = join(dir, 'input.json');
    await writeFile(file, '{"prompt":"from a file"}');
    for (const [flag, id] of [
      ['-f', 'cli_file_short'],
      ['--file', 'cli_file_long'],
    ] as const) {
      const submitted = json(
        await kubectl(
          ['tasks', 'submit', 'sle/queue', '-n', NS, flag, file, '--task-id', id, '-o', 'json'],
          {},
          '{"prompt":"from stdin"}',
        ),
      ) as { taskId: string };
      assert.equal(submitted.taskId, id);
      const got = json(await kubectl(['tasks', 'get', 'sle/queue', id, '-n', NS, '-o', 'json'])) as {
        input: unknown;
      };
      assert.deepEqual(got.input, { prompt: 'from a file' }, flag);
    }
    const missing = await kubectl(['tasks', 'submit', 'sle/queue', '-n', NS, '-f', join(dir, 'nope.json')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /cannot read the task input \S*nope\.json \(ENOENT\)/);
  });

  test('logs -f (--follow) keeps following the log; without it, logs prints it and exits', async () => {
    const printed = await kubectl(['logs', 'gpupod/notebook', '-n', NS]);
    assert.equal(printed.code, 0, printed.stderr);
    const lines = printed.stdout.trim().split('\n');
    for (const flag of ['-f', '--follow']) {
      const followed = await follow(
        ['logs', 'gpupod/notebook', '-n', NS, flag, '--poll-ms', '100'],
        lines.length,
      );
      assert.equal(followed.exited, undefined, `${flag}: stopped following (${followed.stderr})`);
      assert.deepEqual(followed.stdout.trim().split('\n'), lines, flag);
    }
  });

  test('tasks get and watch take a ServerlessTask, and print the output its status may leave out', async () => {
    const cluster = stack.cluster();
    const big = { text: 'y'.repeat(20_000) };
    await cluster.create(
      resources.serverlessTask,
      NS,
      manifests.serverlessTask('render', 'queue', { input: big }),
    );
    const done = await cluster.waitFor(
      resources.serverlessTask,
      NS,
      'render',
      (obj) => obj?.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') === true,
      'Complete',
    );
    assert.equal(done?.status?.outputTruncated, true);
    const got = json(await kubectl(['tasks', 'get', 'serverlesstask/render', '-n', NS, '-o', 'json'])) as {
      taskId: string;
      output: unknown;
    };
    assert.equal(got.taskId, done?.status?.taskId);
    assert.deepEqual(got.output, { echo: big });
    const watched = json(await kubectl(['tasks', 'watch', 'slt/render', '-n', NS, '-o', 'json'])) as {
      status: string;
    };
    assert.equal(watched.status, 'SUCCESS');
  });

  test('ssh prints the command, and --exec runs ssh with an argument list, never a shell', async () => {
    const printed = await kubectl(['ssh', 'gpupod/notebook', '-n', NS]);
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, /^ssh \S+ -p \d+\n$/);
    // A stub ssh on the PATH: prints each argument it was given on a line of its own.
    const stub = join(dir, 'ssh');
    await writeFile(stub, '#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n');
    await chmod(stub, 0o755);
    const ran = await kubectl(['ssh', 'gpuvm/box', '-n', NS, '--exec', '--', 'uname; touch /tmp/pwned']);
    assert.equal(ran.code, 0, ran.stderr);
    const args = ran.stdout.trim().split('\n');
    assert.equal(args.at(-1), 'uname; touch /tmp/pwned', 'the extra argument arrives whole, unparsed');
    assert.ok(args.includes('-p'));
  });

  test('cost per resource and per namespace, from status', async () => {
    const spend = json(await kubectl(['cost', '-n', NS, '-o', 'json'])) as {
      resources: Array<{ kind: string; name: string; perHour: number }>;
      namespaces: Record<string, { perHour: number }>;
    };
    const pod = spend.resources.find((row) => row.kind === 'GpuPod' && row.name === 'notebook');
    assert.ok(pod && pod.perHour > 0, JSON.stringify(spend.resources));
    const total = spend.resources.reduce((sum, row) => sum + row.perHour, 0);
    assert.ok(Math.abs((spend.namespaces[NS]?.perHour ?? 0) - total) < 1e-9);
  });

  test('errors say what to do, with exit codes a script can rely on', async () => {
    const missing = await kubectl(['logs', 'gpupod/nope', '-n', NS]);
    assert.equal(missing.code, 3);
    assert.match(missing.stderr, /GpuPod cli\/nope not found/);
    const wrongKind = await kubectl(['logs', 'sle/queue', '-n', NS]);
    assert.equal(wrongKind.code, 2);
    assert.match(wrongKind.stderr, /takes GpuPod, not ServerlessEndpoint/);
    const noKey = await kubectl(['logs', '--id', podId], { GPUCLOUD_API_KEY: undefined });
    assert.equal(noKey.code, 4);
    assert.match(noKey.stderr, /--id needs an API key you hold/);
    const badKey = await kubectl(['logs', '--id', podId], { GPUCLOUD_API_KEY: 'not-a-key' });
    assert.equal(badKey.code, 4);
    assert.match(badKey.stderr, /refused the API key/);
    assert.ok(!badKey.stderr.includes('not-a-key'), 'the key is never printed');
    const gone = await kubectl(['logs', '--id', '999999999']);
    assert.equal(gone.code, 3);
    assert.match(gone.stderr, /refused the call \(code \d+\)/);
    const unknown = await kubectl(['teleport']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command "teleport"/);
    await stack
      .cluster()
      .create(
        resources.gpuPod,
        NS,
        manifests.gpuPod('idle', {}, { annotations: { [SKIP_RECONCILE]: 'true' } }),
      );
    const noId = await kubectl(['logs', 'gpupod/idle', '-n', NS]);
    assert.equal(noId.code, 3);
    assert.match(noId.stderr, /has no status\.id yet/);
  });

  test("a resource's key comes from its ProviderConfig's Secret, only when the caller may read it", async () => {
    const cluster = stack.cluster();
    await cluster.ensureNamespace('accounts');
    await cluster.client.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(secrets, 'accounts'),
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'team-key' },
        stringData: { 'api-key': API_KEY },
      },
    });
    await cluster.client.request(z.unknown(), {
      method: 'POST',
      path: '/apis/gpucloud.io/v1alpha1/providerconfigs',
      body: {
        apiVersion: 'gpucloud.io/v1alpha1',
        kind: 'ProviderConfig',
        metadata: { name: 'team-cli' },
        spec: {
          apiUrl: stack.sim().url,
          credentials: { secretRef: { namespace: 'accounts', name: 'team-key', key: 'api-key' } },
          namespaces: { names: [NS] },
        },
      },
    });
    // Left alone by the operator; its status names the notebook pod's id, as the operator would.
    await cluster.create(
      resources.gpuPod,
      NS,
      manifests.gpuPod(
        'team-pod',
        { providerConfigRef: { name: 'team-cli' } },
        { annotations: { [SKIP_RECONCILE]: 'true' } },
      ),
    );
    await cluster.client.request(z.unknown(), {
      method: 'PATCH',
      path: `${objectPath(resources.gpuPod, { namespace: NS, name: 'team-pod' })}/status`,
      patchType: 'application/merge-patch+json',
      body: { status: { id: podId, sshCommand: 'ssh root@team.example.com -p 22' } },
    });
    const asAdmin = await kubectl(['logs', 'gpupod/team-pod', '-n', NS, '--limit', '1', '-v'], {
      GPUCLOUD_API_KEY: undefined,
      GPUCLOUD_API_URL: undefined,
    });
    assert.equal(asAdmin.code, 0, asAdmin.stderr);
    assert.match(asAdmin.stderr, /gpucloud logs: straight to the GPU cloud API, with a key you hold/);

    // A tenant who may read GpuPods but not that Secret gets no key from the cluster.
    await grantTenant(cluster.client, NS, 'cli-tenant', ['get', 'list']);
    const config = load(await readFile(stack.plane().kubeconfigPath, 'utf8')) as {
      users: Array<{ user: Record<string, unknown> }>;
    };
    for (const entry of config.users) entry.user.as = 'cli-tenant';
    const tenantConfig = join(dir, 'tenant-kubeconfig');
    await writeFile(tenantConfig, dump(config));
    const asTenant = await kubectl(['logs', 'gpupod/team-pod', '-n', NS, '--limit', '1'], {
      KUBECONFIG: tenantConfig,
      GPUCLOUD_API_KEY: undefined,
    });
    // Nor may it use the tenant API (none is served here, and it holds no grant on it either:
    // test/tenant-api/ covers the way through it).
    assert.equal(asTenant.code, 4, asTenant.stderr);
    assert.match(asTenant.stderr, /needs an API key you hold, or the operator's tenant API, which refused/);
    assert.match(asTenant.stderr, /cannot get resource "gpupods\/log" in API group "tenant.gpucloud.io"/);
    const withOwnKey = await kubectl(['logs', 'gpupod/team-pod', '-n', NS, '--limit', '1'], {
      KUBECONFIG: tenantConfig,
    });
    assert.equal(withOwnKey.code, 0, withOwnKey.stderr);
  });
});
