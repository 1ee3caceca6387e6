import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { GpuCloudClient } from '../../src/api/client.ts';
import { isStatus } from '../../src/kube/client.ts';
import { collectionPath } from '../../src/kube/resource-type.ts';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { startAdmissionWebhook } from '../support/admission-webhook.ts';
import { eventually, NotYet, notYet } from '../support/eventually.ts';
import {
  API_KEY,
  condition,
  isReady,
  manifests,
  objectSchema,
  resources,
  type TestObject,
  useOperator,
  useStack,
} from '../support/operator.ts';
import { poll, until } from '../support/until.ts';

// Budgets in dollars per hour, enforced by the operator on the real apiserver and the simulator over HTTP.
// Each test has its own cloud account (its own organisation in the simulator, its own key and
// ProviderConfig) and its own namespaces, so that no test sees another's spend. Every pod here is one
// on-demand L40S in us-east-1: one offer, so its price before the create is the one it reports after.
const KEYS = {
  burst: 'budget-burst-key',
  scoped: 'budget-scoped-key',
  scopedBurst: 'budget-scoped-burst-key',
  resume: 'budget-resume-key',
};
const stack = useStack({
  apiKeys: [
    API_KEY,
    { key: KEYS.burst, org: 'budget-burst' },
    { key: KEYS.scoped, org: 'budget-scoped' },
    { key: KEYS.scopedBurst, org: 'budget-scoped-burst' },
    { key: KEYS.resume, org: 'budget-resume' },
  ],
});
const KEY_NS = 'gpucloud-system';
const NS = {
  burst: 'budget-burst',
  x: 'budget-x',
  y: 'budget-y',
  z: 'budget-z',
  resume: 'budget-resume',
};
const GPU = 'NVIDIA L40S';
const REGION = 'us-east-1';
/** Pods with this label go through the webhook of the test that holds the writes recording their ids. */
const HOLD_LABEL = 'test.gpucloud.io/hold-record';
/** Every pod of this file: 1 × L40S, on-demand, in one region. */
const podSpec = (account: string, extra: Record<string, unknown> = {}) => ({
  gpuType: GPU,
  gpuCount: 1,
  regions: [REGION],
  providerConfigRef: { name: account },
  ...extra,
});
// Reconciles at a time per kind (--concurrency; 16 is also the default), more than the pods that fit in
// the burst's budget, so that more creates are in flight at once than there is money for.
const CONCURRENCY = 16;

const listSchema = z.object({ items: z.array(objectSchema) });
const synced = (reason: string) => (obj: TestObject | undefined) =>
  condition(obj, 'Synced')?.reason === reason;
/** API calls the simulator has answered for `operation`, over every account. */
const callsTo = (operation: string) => stack.sim().calls.snapshot().byOperation[operation] ?? 0;
/** The cloud pods of an organisation that are not terminated. */
const livePodsOf = (org: string) =>
  stack
    .sim()
    .state.snapshot()
    .pods.filter((pod) => pod.org === org && pod.status !== 'TERMINATED');
const cloudPodsNamed = (org: string, name: string) =>
  stack
    .sim()
    .state.snapshot()
    .pods.filter((pod) => pod.org === org && pod.name === name);
const absent = (error: unknown) => {
  if (!isStatus(error, 404)) throw error;
};

async function gpuPods(namespace: string): Promise<TestObject[]> {
  const list = await stack.cluster().client.request(listSchema, {
    method: 'GET',
    path: collectionPath(resources.gpuPod, namespace),
  });
  return list.items;
}

/** A namespace's GpuPods once each runs or was last refused for a budget. */
interface Settled {
  readonly running: TestObject[];
  readonly refused: TestObject[];
}

/**
 * Waits until the `total` GpuPods of `namespace` have settled: each runs or was last refused for a budget
 * (a refusal reads UsageNotCounted for a moment while a new pod's price is read: not settled), every pod
 * the cloud holds for `org` runs, and at least `running` of them do. Fails with a short tally of what it
 * saw last, not the objects.
 */
function settled(namespace: string, org: string, total: number, running: number): Promise<Settled> {
  return eventually(
    async () => {
      const pods = await gpuPods(namespace);
      const up = pods.filter(isReady('Running'));
      const refused = pods.filter(synced('BudgetExceeded'));
      const other = pods
        .filter((obj) => !up.includes(obj) && !refused.includes(obj))
        .map(
          (obj) =>
            `${obj.metadata.name} (${condition(obj, 'Synced')?.reason}/${condition(obj, 'Ready')?.reason})`,
        );
      const live = livePodsOf(org).length;
      if (pods.length !== total || other.length > 0 || live !== up.length || up.length < running) {
        throw new NotYet(
          `${pods.length} pods: ${up.length} running, ${refused.length} refused for the budget, ${live} live ` +
            `in the cloud; others: ${other.join(', ') || 'none'}`,
        );
      }
      return { running: up, refused };
    },
    { timeoutMs: 60_000, retrying: notYet },
  );
}

/**
 * The on-demand price per GPU-hour of the one offer every pod here can get, read with the typed client's
 * GPU search: the figure a budget is computed from.
 */
async function offerPrice(apiKey: string): Promise<number> {
  const client = new GpuCloudClient({ baseUrl: stack.sim().url, apiKey });
  try {
    const offers = await Array.fromAsync(
      client.pods.searchGpusAll({
        gpuTypes: [GPU],
        regions: [REGION],
        gpuCounts: [1],
        isSpot: false,
        includeUnavailable: true,
      }),
    );
    assert.equal(offers.length, 1, 'one offer: the price of a pod here is not a range');
    const option = offers[0]?.gpuCountOptions.find((each) => each.gpuCount === 1);
    assert.ok(option, 'a 1-GPU option');
    const price = Number(option.price.pricePerGpuPerHour);
    assert.ok(price > 0, `a price: ${option.price.pricePerGpuPerHour}`);
    return price;
  } finally {
    await client.close();
  }
}

/** A key Secret and a ProviderConfig for `account`, its `namespaces` allowed; waits until it is Ready. */
async function accountWith(
  account: string,
  key: string,
  namespaces: readonly string[],
  budgets: ReadonlyArray<Record<string, unknown>>,
): Promise<void> {
  const cluster = stack.cluster();
  await cluster.create(resources.secret, KEY_NS, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${account}-key` },
    stringData: { 'api-key': key },
  });
  await cluster.create(resources.providerConfig, '', {
    apiVersion: 'gpucloud.io/v1alpha1',
    kind: 'ProviderConfig',
    metadata: { name: account },
    spec: {
      apiUrl: stack.sim().url,
      credentials: { secretRef: { namespace: KEY_NS, name: `${account}-key`, key: 'api-key' } },
      namespaces: { names: namespaces },
      guardrails: { budgets },
    },
  });
  await cluster.waitFor(resources.providerConfig, '', account, isReady('KeyAccepted'), 'Ready');
}

/** The refusal's message, as guardrails.ts words it with the figures (dollars to the cent). */
const refusal = (account: string, budget: string, adds: number, wouldMake: number, limit: number) =>
  `provider config ${account}: budget ${budget}: $${adds.toFixed(2)}/h more would make $${wouldMake.toFixed(2)}/h, over its maxSpendPerHour of $${limit.toFixed(2)}/h; retried as spend frees up`;

describe('budgets in dollars per hour', () => {
  const operator = useOperator(stack, [KEY_NS, ...Object.values(NS)], {
    flags: ['--concurrency', String(CONCURRENCY)],
  });
  /** Reconciles of `resource` the operator logged as failed for `reason`: one line each, repeats included. */
  const refusals = (resource: string, reason: string) =>
    operator().logs.filter((text) => {
      const line = JSON.parse(text) as { resource?: string; reason?: string };
      return line.resource === resource && line.reason === reason;
    }).length;

  test('a burst of 50 against a budget that fits 10, on a slow cloud, creates exactly 10; deletes make room for more', async () => {
    const account = 'budget-burst';
    const BURST = 50;
    const FITS = 10;
    const FREED = 3;
    // The simulator's L40S offer is $0.99 per GPU-hour: a 1-GPU pod costs 0.99 × 1 = $0.99/h, ten of them
    // $9.90/h. The budget is exactly that: ten fit (a spend equal to the limit is within it), an eleventh
    // would make $10.89/h.
    const price = await offerPrice(KEYS.burst);
    const limit = price * FITS;
    assert.ok(CONCURRENCY > FITS, 'more reconciles at once than pods that fit');
    await accountWith(account, KEYS.burst, [NS.burst], [{ name: 'burst-cap', maxSpendPerHour: limit }]);
    const cluster = stack.cluster();
    const names = Array.from({ length: BURST }, (_, index) => `burst-${index}`);
    const createsBefore = callsTo('pods.create');
    try {
      // Every create takes 300 ms, as a real cloud's might: each check runs before the others' answers are in.
      stack.sim().faults.set({ latencyMs: 300, operations: ['pods.create'] });
      await Promise.all(
        names.map((name) =>
          cluster.create(resources.gpuPod, NS.burst, manifests.gpuPod(name, podSpec(account))),
        ),
      );
      const { running, refused } = await settled(NS.burst, account, BURST, FITS);
      assert.equal(running.length, FITS, 'exactly the pods that fit run');
      assert.equal(refused.length, BURST - FITS, 'every other pod is refused');
      for (const obj of refused) {
        const sync = condition(obj, 'Synced');
        assert.equal(sync?.status, 'False');
        assert.equal(sync?.message, refusal(account, 'burst-cap', price, limit + price, limit));
        assert.equal(obj.status?.id, undefined, `${obj.metadata.name} names no cloud object`);
        assert.deepEqual(
          cloudPodsNamed(account, obj.metadata.name),
          [],
          `nothing of ${obj.metadata.name} runs`,
        );
      }
      assert.equal(
        callsTo('pods.create') - createsBefore,
        FITS,
        'one create per pod that fits, none for the rest',
      );
      assert.equal(livePodsOf(account).length, FITS, 'exactly the pods that fit live in the cloud');
      // What the running pods report they cost: singleCardPrice × gpuCount each, the budget's $9.90/h in all.
      const reported = await poll(
        async () => {
          const pods = await Promise.all(
            running.map((obj) => cluster.get(resources.gpuPod, NS.burst, obj.metadata.name)),
          );
          return pods.map((obj) => (obj?.status?.prices as { singleCard?: string } | undefined)?.singleCard);
        },
        (prices) => prices.every((each) => each !== undefined),
        'every running pod reports its price',
      );
      assert.deepEqual(new Set(reported.map(Number)), new Set([price]));
      assert.ok(Math.abs(reported.reduce((sum, each) => sum + Number(each), 0) - limit) < 1e-9);

      // Deleting 3 running pods frees $2.97/h: exactly 3 of the refused go through on later tries.
      const deleted = running.slice(0, FREED).map((obj) => obj.metadata.name);
      for (const name of deleted) await cluster.delete(resources.gpuPod, NS.burst, name);
      for (const name of deleted) {
        await cluster.waitFor(
          resources.gpuPod,
          NS.burst,
          name,
          (obj) => obj === undefined,
          'deleted',
          60_000,
        );
      }
      const after = await settled(NS.burst, account, BURST - FREED, FITS);
      assert.equal(after.running.length, FITS, 'as many run as fit');
      const newlyRunning = after.running.filter((obj) =>
        refused.some((was) => was.metadata.name === obj.metadata.name),
      );
      assert.equal(newlyRunning.length, FREED, 'as many refused pods run as were deleted');
      assert.equal(
        callsTo('pods.create') - createsBefore,
        FITS + FREED,
        'one create per pod that went through, none for the rest',
      );
      assert.equal(livePodsOf(account).length, FITS, 'the budget still holds exactly 10 pods');
      for (const obj of after.refused) {
        assert.equal(
          condition(obj, 'Synced')?.message,
          refusal(account, 'burst-cap', price, limit + price, limit),
        );
        assert.equal(obj.status?.id, undefined);
      }
    } finally {
      stack.sim().faults.set({ latencyMs: 0, operations: null });
      for (const name of names) await cluster.delete(resources.gpuPod, NS.burst, name).catch(absent);
    }
  });

  test("a namespaces' budget counts only its namespaces' spend", async () => {
    // One account for budget-x and budget-y; budget team-x covers budget-x only, and fits one pod ($0.99/h).
    const account = 'budget-scoped';
    const price = await offerPrice(KEYS.scoped);
    const limit = price;
    await accountWith(
      account,
      KEYS.scoped,
      [NS.x, NS.y],
      [{ name: 'team-x', namespaces: { names: [NS.x] }, maxSpendPerHour: limit }],
    );
    const cluster = stack.cluster();
    const created: Array<[string, string]> = [];
    const create = async (namespace: string, name: string) => {
      created.push([namespace, name]);
      await cluster.create(resources.gpuPod, namespace, manifests.gpuPod(name, podSpec(account)));
    };
    try {
      await create(NS.x, 'x-first');
      await cluster.waitFor(resources.gpuPod, NS.x, 'x-first', isReady('Running'), 'Running', 60_000);
      // budget-x's budget is full; budget-y is not held to it: two pods there ($1.98/h) run on the same account.
      await create(NS.y, 'y-first');
      await create(NS.y, 'y-second');
      for (const name of ['y-first', 'y-second']) {
        const obj = await cluster.waitFor(
          resources.gpuPod,
          NS.y,
          name,
          (obj) => isReady('Running')(obj) || synced('BudgetExceeded')(obj),
          'Running',
          60_000,
        );
        assert.ok(isReady('Running')(obj), `${name}: ${JSON.stringify(condition(obj, 'Synced'))}`);
      }
      assert.equal(
        livePodsOf(account).length,
        3,
        'the account runs 3 pods: $2.97/h, beyond the budget of budget-x',
      );
      // A second pod in budget-x would make budget-x's own spend $1.98/h: refused, and the message counts
      // budget-x's $0.99/h only (with budget-y's pods it would read $3.96/h).
      const createsBefore = callsTo('pods.create');
      await create(NS.x, 'x-second');
      const refused = await cluster.waitFor(
        resources.gpuPod,
        NS.x,
        'x-second',
        (obj) => synced('BudgetExceeded')(obj) || obj?.status?.id !== undefined,
        'refused',
        60_000,
      );
      assert.equal(condition(refused, 'Synced')?.status, 'False');
      assert.equal(
        condition(refused, 'Synced')?.message,
        refusal(account, 'team-x', price, 2 * price, limit),
      );
      assert.equal(callsTo('pods.create'), createsBefore, 'no create was sent');
      assert.deepEqual(cloudPodsNamed(account, 'x-second'), []);
    } finally {
      for (const [namespace, name] of created) {
        await cluster.delete(resources.gpuPod, namespace, name).catch(absent);
      }
    }
  });

  test("a burst in a namespaces' budget ends within it, though the apiserver is slow to record the new ids", async () => {
    // As the account-wide burst above, for a budget that covers budget-z by name and fits 3 pods ($2.97/h).
    // A namespaces' budget counts a cloud object for the namespace of the resource that claims it, which
    // the operator learns from the informer once the id it records is stored. A webhook holds each write that
    // records an id for 2 s, as a busy apiserver might: through that window the new pod is nobody's, so the
    // create's reservation must hold until a resource holds it (before that fix, 8 to 12 pods were created).
    const account = 'budget-scoped-burst';
    const BURST = 12;
    const FITS = 3;
    const HOLD_MS = 2_000;
    const price = await offerPrice(KEYS.scopedBurst);
    const limit = price * FITS;
    await accountWith(
      account,
      KEYS.scopedBurst,
      [NS.z],
      [{ name: 'team-z', namespaces: { names: [NS.z] }, maxSpendPerHour: limit }],
    );
    const cluster = stack.cluster();
    const webhook = await startAdmissionWebhook(stack.plane(), {
      name: 'budgets-slow-record',
      namespace: NS.z,
      matchLabels: { [HOLD_LABEL]: 'true' },
      rules: [
        {
          apiGroups: ['gpucloud.io'],
          apiVersions: ['*'],
          operations: ['CREATE', 'UPDATE'],
          resources: ['gpupods'],
        },
      ],
      admit: async (request) => {
        const recording =
          request.object?.metadata.annotations?.[EXTERNAL_ID] !== undefined &&
          request.oldObject?.metadata.annotations?.[EXTERNAL_ID] === undefined;
        if (recording) await sleep(HOLD_MS);
      },
    });
    const names = Array.from({ length: BURST }, (_, index) => `z-${index}`);
    const held = (name: string) =>
      manifests.gpuPod(name, podSpec(account), { labels: { [HOLD_LABEL]: 'true' } });
    const createsBefore = callsTo('pods.create');
    try {
      await webhook.effective(() =>
        cluster.client.request(z.unknown(), {
          method: 'POST',
          path: collectionPath(resources.gpuPod, NS.z),
          query: { dryRun: 'All' },
          body: held('probe'),
        }),
      );
      stack.sim().faults.set({ latencyMs: 300, operations: ['pods.create'] });
      await Promise.all(names.map((name) => cluster.create(resources.gpuPod, NS.z, held(name))));
      const { running, refused } = await settled(NS.z, account, BURST, FITS);
      assert.equal(
        callsTo('pods.create') - createsBefore,
        FITS,
        `one create per pod that fits ($${limit.toFixed(2)}/h); live in the cloud: ${livePodsOf(account).length} ` +
          `pods, $${(livePodsOf(account).length * price).toFixed(2)}/h`,
      );
      assert.equal(running.length, FITS);
      for (const obj of refused) {
        assert.equal(
          condition(obj, 'Synced')?.message,
          refusal(account, 'team-z', price, limit + price, limit),
        );
      }
    } finally {
      stack.sim().faults.set({ latencyMs: 0, operations: null });
      await webhook.stop();
      for (const name of names) await cluster.delete(resources.gpuPod, NS.z, name).catch(absent);
    }
  });

  test('a paused pod is refused its resume while the budget is full, and resumes once spend frees up', async () => {
    // The budget fits one pod ($0.99/h). A create runs what it creates (the request has no paused flag), so
    // the paused pod is made while the budget has room; paused, it costs nothing, and a filler takes the room.
    const account = 'budget-resume';
    const price = await offerPrice(KEYS.resume);
    const limit = price;
    await accountWith(account, KEYS.resume, [NS.resume], [{ name: 'one-pod', maxSpendPerHour: limit }]);
    const cluster = stack.cluster();
    const cloudPod = () => cloudPodsNamed(account, 'held')[0];
    try {
      await cluster.create(
        resources.gpuPod,
        NS.resume,
        manifests.gpuPod('held', podSpec(account, { paused: true })),
      );
      await cluster.waitFor(resources.gpuPod, NS.resume, 'held', isReady('Paused'), 'Paused', 60_000);
      assert.equal(cloudPod()?.status, 'PAUSED');
      await cluster.create(resources.gpuPod, NS.resume, manifests.gpuPod('filler', podSpec(account)));
      await cluster.waitFor(resources.gpuPod, NS.resume, 'filler', isReady('Running'), 'Running', 60_000);
      const resumesBefore = callsTo('pods.resume');
      await cluster.patch(resources.gpuPod, NS.resume, 'held', { spec: { paused: false } });
      const refused = await cluster.waitFor(
        resources.gpuPod,
        NS.resume,
        'held',
        (obj) => synced('BudgetExceeded')(obj) || isReady('Running')(obj),
        'resume refused',
        60_000,
      );
      assert.equal(condition(refused, 'Synced')?.status, 'False');
      assert.equal(
        condition(refused, 'Synced')?.message,
        refusal(account, 'one-pod', price, 2 * price, limit),
      );
      // A retry is refused too, and still nothing was sent.
      // Each failed reconcile logs its line; the Warning is said once.
      await until(() => refusals(`${NS.resume}/held`, 'BudgetExceeded') >= 2, 'refused twice');
      assert.equal(callsTo('pods.resume'), resumesBefore, 'no resume was sent');
      assert.equal(cloudPod()?.status, 'PAUSED');
      // Deleting the filler frees its $0.99/h: the resume goes through on a later try.
      await cluster.delete(resources.gpuPod, NS.resume, 'filler');
      await cluster.waitFor(resources.gpuPod, NS.resume, 'held', isReady('Running'), 'resumed', 60_000);
      assert.equal(cloudPod()?.status, 'RUNNING');
      assert.equal(callsTo('pods.resume'), resumesBefore + 1, 'one resume, once there was room');
    } finally {
      for (const name of ['held', 'filler'])
        await cluster.delete(resources.gpuPod, NS.resume, name).catch(absent);
    }
  });
});
