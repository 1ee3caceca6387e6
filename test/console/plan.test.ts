import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { collectionPath, objectPath, secrets } from '../../src/kube/resource-type.ts';
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

// `kubectl gpucloud plan`, as a user runs it, against the local apiserver and the simulator over HTTP: the
// price of manifests before they are applied, and what their account's guardrails and budgets say of
// them. The operator runs, so the same manifests are then applied and their prices read back.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'src/cli/gpucloud.ts');
const NS = 'plan';
const ACCOUNT = 'capped';
const stack = useStack();
let operator: RunningOperator;
let dir: string;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** `kubectl gpucloud ARGS`: kubectl finds the plugin on the PATH, with the pinned Node 24 first on it. */
function kubectl(args: string[], stdin?: string): Promise<Ran> {
  const env = {
    PATH: [join(ROOT, 'bin'), dirname(process.execPath), process.env.PATH].join(delimiter),
    HOME: dir,
    KUBECONFIG: stack.plane().kubeconfigPath,
    GPUCLOUD_API_URL: stack.sim().url,
    GPUCLOUD_API_KEY: API_KEY,
  };
  return run('/usr/bin/kubectl', ['gpucloud', ...args], env, stdin);
}

function run(program: string, args: string[], env: Record<string, string>, stdin?: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = execFile(program, args, { env }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
    child.stdin?.end(stdin ?? '');
  });
}

const priceSchema = z.object({
  priced: z.boolean(),
  perHour: z.number().optional(),
  exactness: z.string().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
});
const verdictSchema = z.object({ check: z.string(), outcome: z.string(), message: z.string() });
const planSchema = z.object({
  resources: z.array(
    z.object({
      name: z.string(),
      kind: z.string(),
      account: z.string(),
      price: priceSchema,
      placement: z
        .object({ gpuType: z.string(), region: z.string(), spot: z.boolean(), pricePerGpuHour: z.number() })
        .optional(),
      outcome: z.string(),
      verdicts: z.array(verdictSchema),
    }),
  ),
  total: z.object({ perHour: z.number(), unpriced: z.number() }),
  accounts: z.array(
    z.object({
      name: z.string(),
      guardrails: z.string(),
      problem: z.string().optional(),
      spend: z.object({ perHour: z.number() }),
      budgets: z.array(
        z.object({
          budget: z.string(),
          nowPerHour: z.number().optional(),
          outcome: z.string(),
          message: z.string(),
        }),
      ),
    }),
  ),
  outcome: z.string(),
});
type Plan = z.output<typeof planSchema>;

function planOf(ran: Ran, code = 0): Plan {
  assert.equal(ran.code, code, `exit ${ran.code}: ${ran.stderr}${ran.stdout}`);
  return planSchema.parse(JSON.parse(ran.stdout));
}

function resourceOf(plan: Plan, name: string) {
  const found = plan.resources.find((resource) => resource.name === name);
  assert.ok(found, `${name} in ${JSON.stringify(plan.resources)}`);
  return found;
}

function perHourOf(plan: Plan, name: string): number {
  const { price } = resourceOf(plan, name);
  assert.ok(price.priced && price.perHour !== undefined, JSON.stringify(price));
  return price.perHour;
}

function budgetOf(plan: Plan, budget: string) {
  const found = plan.accounts
    .find((account) => account.name === ACCOUNT)
    ?.budgets.find((b) => b.budget === budget);
  assert.ok(found, `budget ${budget} in ${JSON.stringify(plan.accounts)}`);
  return found;
}

/** Writes `objects` as one YAML file of several documents, and answers its path. */
async function manifestFile(name: string, ...objects: object[]): Promise<string> {
  const file = join(dir, name);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, objects.map((object) => dump(object)).join('---\n'));
  return file;
}

const inAccount = { providerConfigRef: { name: ACCOUNT } };

async function setBudgets(budgets: unknown[]): Promise<void> {
  await stack.cluster().client.request(z.unknown(), {
    method: 'PATCH',
    path: objectPath(resources.providerConfig, { namespace: '', name: ACCOUNT }),
    patchType: 'application/merge-patch+json',
    body: { spec: { guardrails: { budgets } } },
  });
}

describe('gpucloud plan', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpucloud-plan-'));
    const cluster = stack.cluster();
    await cluster.ensureNamespace(NS);
    await cluster.ensureNamespace('accounts');
    await cluster.client.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(secrets, 'accounts'),
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'capped-key' },
        stringData: { 'api-key': API_KEY },
      },
    });
    await cluster.client.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(resources.providerConfig),
      body: {
        apiVersion: 'gpucloud.io/v1alpha1',
        kind: 'ProviderConfig',
        metadata: { name: ACCOUNT },
        spec: {
          apiUrl: stack.sim().url,
          credentials: { secretRef: { namespace: 'accounts', name: 'capped-key', key: 'api-key' } },
          namespaces: { names: [NS] },
          guardrails: { budgets: [{ name: 'account', maxSpendPerHour: 1000 }] },
        },
      },
    });
    operator = await startOperator(stack.plane(), stack.sim());
  });
  after(async () => {
    await operator.stop();
  });

  test("a pod's price is what the pod reports once the same manifest is created; a VM's what its status says", async () => {
    const pod = {
      ...manifests.gpuPod('priced', { gpuType: 'NVIDIA L40S', gpuCount: 2 }),
      metadata: { name: 'priced', namespace: NS },
    };
    const vm = {
      ...manifests.gpuVm('vmbox', { vmTypeId: 402, region: 'us-east-1', isSpot: true }),
      metadata: { name: 'vmbox', namespace: NS },
    };
    await manifestFile('applied/pod.yaml', pod);
    await manifestFile('applied/vm.json', vm);
    const plan = planOf(await kubectl(['plan', '-f', join(dir, 'applied'), '-o', 'json']));
    assert.deepEqual(
      plan.resources.map((resource) => [
        resource.kind,
        resource.name,
        resource.price.exactness,
        resource.outcome,
      ]),
      [
        ['GpuPod', 'priced', 'quoted', 'allowed'],
        ['GpuVm', 'vmbox', 'quoted', 'allowed'],
      ],
    );
    assert.equal(plan.total.perHour, perHourOf(plan, 'priced') + perHourOf(plan, 'vmbox'));

    const cluster = stack.cluster();
    await cluster.create(resources.gpuPod, NS, pod);
    await cluster.create(resources.gpuVm, NS, vm);
    const created = await cluster.waitFor(
      resources.gpuPod,
      NS,
      'priced',
      (obj) =>
        isReady()(obj) &&
        z.object({ prices: z.object({ singleCard: z.string() }) }).safeParse(obj?.status).success,
      'Ready, with its prices',
    );
    const { singleCard } = z
      .object({ prices: z.object({ singleCard: z.string() }) })
      .parse(created?.status).prices;
    assert.equal(perHourOf(plan, 'priced'), Number(singleCard) * 2, `singleCardPrice ${singleCard} × 2 GPUs`);
    const box = await cluster.waitFor(
      resources.gpuVm,
      NS,
      'vmbox',
      (obj) => typeof obj?.status?.pricePerHour === 'string',
      'its price in status',
    );
    assert.equal(perHourOf(plan, 'vmbox'), Number(box?.status?.pricePerHour));

    const table = await kubectl(['plan', '-f', join(dir, 'applied', 'pod.yaml')]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^plan\s+gpupod\/priced\s+default\s+1\.9800\s+quoted\s+offers\s+allowed$/m);
    assert.match(table.stdout, /^\s+total \(1\)\s+1\.9800\s+allowed$/m);
  });

  test('a placed pod: plan shows the offer placement would pick, and the operator places it there', async () => {
    // RTX A6000 (0.79) and RTX 4090 (0.69) in eu-west-1: the 4090 is cheaper.
    const pod = {
      ...manifests.gpuPod('picked', {
        gpuType: undefined,
        regions: ['eu-west-1'],
        placement: { gpuTypes: ['NVIDIA RTX A6000', 'NVIDIA GeForce RTX 4090'] },
      }),
      metadata: { name: 'picked', namespace: NS },
    };
    await manifestFile('placed/pod.yaml', pod);
    const plan = planOf(await kubectl(['plan', '-f', join(dir, 'placed'), '-o', 'json']));
    const planned = resourceOf(plan, 'picked');
    assert.deepEqual(planned.placement, {
      gpuType: 'NVIDIA GeForce RTX 4090',
      region: 'eu-west-1',
      spot: false,
      pricePerGpuHour: 0.69,
    });
    assert.equal(perHourOf(plan, 'picked'), 0.69);
    const table = await kubectl(['plan', '-f', join(dir, 'placed', 'pod.yaml')]);
    assert.match(
      table.stdout,
      /gpupod\/picked: placement would pick NVIDIA GeForce RTX 4090 on-demand in eu-west-1 at 0\.69 USD\/GPU-hour/,
    );
    await stack.cluster().create(resources.gpuPod, NS, pod);
    const created = await stack
      .cluster()
      .waitFor(resources.gpuPod, NS, 'picked', isReady('Running'), 'Running', 60_000);
    const placed = z
      .object({ placement: z.object({ gpuType: z.string(), pricePerGpuHour: z.string() }) })
      .parse(created?.status).placement;
    assert.deepEqual(
      placed,
      { gpuType: 'NVIDIA GeForce RTX 4090', pricePerGpuHour: '0.6900' },
      'what plan said',
    );
    // Gone again: the tests after this one count the account's spend.
    await stack.cluster().delete(resources.gpuPod, NS, 'picked');
    await stack
      .cluster()
      .waitFor(resources.gpuPod, NS, 'picked', (obj) => obj === undefined, 'deleted', 60_000);
    await poll(
      async () =>
        stack
          .sim()
          .state.snapshot()
          .pods.filter((pod) => pod.name === 'picked' && pod.status !== 'TERMINATED'),
      (live) => live.length === 0,
      'the cloud pod terminated',
    );
  });

  test('a resource no offer matches exits 6 and says what was asked; read from standard input', async () => {
    const manifest = dump(manifests.gpuPod('huge', { gpuType: 'NVIDIA RTX A6000', gpuCount: 8 }));
    const ran = await kubectl(['plan', '-f', '-', '-n', NS, '-o', 'json'], manifest);
    const plan = planOf(ran, 6);
    const huge = resourceOf(plan, 'huge');
    assert.deepEqual(
      [huge.price.priced, huge.price.reason, huge.outcome],
      [false, 'NoOfferMatches', 'refused'],
    );
    assert.match(huge.price.message ?? '', /no GPU offer matches 8 × NVIDIA RTX A6000, on-demand/);
    assert.match(ran.stderr, /^plan: 1 of 1 resources would not be created now/m);
    const table = await kubectl(['plan', '-f', '-', '-n', NS], manifest);
    assert.equal(table.code, 6);
    assert.match(table.stdout, /gpupod\/huge\s+default\s+no offer\s+NoOfferMatches\s+refused \(price\)/);
  });

  test("budgets weigh the account's spend now, managed or not, and their namespaces'; one that would be exceeded exits 6", async () => {
    const cluster = stack.cluster();
    // A member of the account in the budget's namespace, made by the operator, and an object nobody manages.
    const member = {
      ...manifests.gpuPod('member', { gpuType: 'NVIDIA L40S', gpuCount: 1, ...inAccount }),
      metadata: { name: 'member', namespace: NS },
    };
    await cluster.create(resources.gpuPod, NS, member);
    await cluster.waitFor(resources.gpuPod, NS, 'member', isReady(), 'Ready', 60_000);
    const client = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey: API_KEY });
    const outsider = await client.pods.create({
      name: 'outsider',
      image: 'x',
      gpuType: 'NVIDIA H100 80GB HBM3',
      gpuCount: 1,
    });
    await client.close();
    await setBudgets([
      { name: 'account', maxSpendPerHour: 1000 },
      { name: 'team', namespaces: { names: [NS] }, maxSpendPerMonth: 730_000 },
    ]);
    const big = await manifestFile(
      'big.yaml',
      manifests.gpuPod('big', { gpuType: 'NVIDIA H100 80GB HBM3', gpuCount: 4, ...inAccount }),
    );
    const allowed = planOf(await kubectl(['plan', '-f', big, '-n', NS, '-o', 'json']));
    assert.equal(resourceOf(allowed, 'big').outcome, 'allowed');
    const bigPrice = perHourOf(allowed, 'big');
    assert.equal(bigPrice, 2.99 * 4);
    const accountNow = budgetOf(allowed, 'account').nowPerHour ?? 0;
    // priced (L40S × 2), vmbox (VM type 402: spot RTX 4090 × 2), member (L40S × 1) and the outsider (H100 × 1):
    // every live object of the account.
    assert.ok(
      Math.abs(accountNow - (1.98 + 0.7 + 0.99 + Number(outsider.singleCardPrice))) < 1e-9,
      String(accountNow),
    );
    assert.equal(
      budgetOf(allowed, 'team').nowPerHour,
      0.99,
      "the team's: its namespace's member of the account alone",
    );

    await setBudgets([
      { name: 'account', maxSpendPerHour: Math.round((accountNow + bigPrice / 2) * 100) / 100 },
      { name: 'team', namespaces: { names: [NS] }, maxSpendPerMonth: 730_000 },
    ]);
    const ran = await kubectl(['plan', '-f', big, '-n', NS, '-o', 'json']);
    const refused = planOf(ran, 6);
    assert.equal(resourceOf(refused, 'big').outcome, 'refused');
    assert.deepEqual(
      resourceOf(refused, 'big')
        .verdicts.filter((v) => v.outcome === 'refused')
        .map((v) => v.check),
      ['budget account'],
    );
    assert.equal(budgetOf(refused, 'account').outcome, 'refused');
    assert.equal(budgetOf(refused, 'team').outcome, 'allowed');
    assert.match(ran.stderr, /1 of 1 resources would not be created now/);

    // A monthly budget on the namespace that leaves about 1.50 USD/h for the hours left in this month (what the
    // operator recorded as spent this month so far is cents). A second L40S would make 1.98; the member alone
    // adds nothing.
    const now = Date.now();
    const monthEnd = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth() + 1, 1);
    const hoursLeft = (monthEnd - now) / 3_600_000;
    await setBudgets([
      { name: 'account', maxSpendPerHour: 1000 },
      {
        name: 'team',
        namespaces: { names: [NS] },
        maxSpendPerMonth: Math.round(1.5 * hoursLeft * 100) / 100,
      },
    ]);
    const second = await manifestFile(
      'second.yaml',
      manifests.gpuPod('second', { gpuType: 'NVIDIA L40S', gpuCount: 1, ...inAccount }),
    );
    const overMonth = planOf(await kubectl(['plan', '-f', second, '-n', NS, '-o', 'json']), 6);
    assert.match(
      resourceOf(overMonth, 'second').verdicts.find((v) => v.check === 'budget team')?.message ?? '',
      /0\.9900 USD\/h more would make 1\.9800 USD\/h, over its maxSpendPerMonth \(what it leaves this month: 1\.(4|5)\d{3} USD\/h for the hours left\)/,
    );
    const same = await manifestFile('member.yaml', member);
    const again = planOf(await kubectl(['plan', '-f', same, '-o', 'json']));
    assert.equal(
      resourceOf(again, 'member').outcome,
      'allowed',
      'the applied manifest holds its object already: it adds nothing',
    );
  });

  test('with an API key and no cluster, prices still come, and guardrails and budgets are unknown, saying why', async () => {
    const file = await manifestFile('no-cluster.yaml', manifests.gpuPod('alone', { ...inAccount }));
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: join(dir, 'no-home'),
      GPUCLOUD_API_URL: stack.sim().url,
      GPUCLOUD_API_KEY: API_KEY,
    };
    const plan = planOf(await run(process.execPath, [CLI, 'plan', '-f', file, '-o', 'json'], env));
    assert.equal(perHourOf(plan, 'alone'), 0.99);
    assert.equal(plan.outcome, 'unknown');
    const [account] = plan.accounts;
    assert.equal(account?.guardrails, 'unknown');
    assert.match(account?.problem ?? '', /^no cluster to read it from/);
    const noKey = await run(process.execPath, [CLI, 'plan', '-f', file], { ...env, GPUCLOUD_API_KEY: '' });
    assert.equal(noKey.code, 4);
    assert.match(noKey.stderr, /plan \(account capped\) needs an API key you hold/);
  });
});
