import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import type { KubeClient } from '../../src/kube/client.ts';
import { collectionPath, pods } from '../../src/kube/resource-type.ts';
import { findModel } from '../../src/sim/catalog.ts';
import { type RunningOperator, resources, startOperator } from '../support/operator.ts';
import { poll } from '../support/until.ts';
import {
  cloudCreates,
  createAccountKey,
  createDefaultServiceAccount,
  listPods,
  liveCloudPods,
  type Pod,
  running,
  useTeamsStack,
  VIRTUAL_NODE_TOLERATION,
  virtualNodeProviderConfig,
  waitForNodeReady,
} from '../support/virtual-node.ts';

// Guardrails and budgets hold for Pods on a virtual node as for GpuPods: 50 Pods bound at once to the node
// (by hand, as a scheduler's bindings would arrive, past the node's allocatable, which only a scheduler
// reads) against a cloud whose creates take 300 ms, so every check runs before any create is answered.
// Real apiserver, the operator in-process, the simulator over HTTP.
const KEY_NS = 'gpucloud-system';
const ACCOUNTS = {
  gpus: { config: 'team-g', namespace: 'team-g', key: 'team-g-burst-key' },
  money: { config: 'team-m', namespace: 'team-m', key: 'team-m-burst-key' },
} as const;
const stack = useTeamsStack({
  [ACCOUNTS.gpus.config]: ACCOUNTS.gpus.key,
  [ACCOUNTS.money.config]: ACCOUNTS.money.key,
});
const BURST = 50;
const FITS = 10;
const GPU = 'NVIDIA L40S';

let admin: KubeClient;
let operator: RunningOperator | undefined;

function podOn(name: string, node: string) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      nodeName: node,
      nodeSelector: { 'gpucloud.io/gpu-type.NVIDIA-L40S': 'true' },
      tolerations: [VIRTUAL_NODE_TOLERATION],
      containers: [
        { name: 'main', image: 'example/app:1', resources: { limits: { 'nvidia.com/gpu': '1' } } },
      ],
    },
  };
}

/** What holds a Pod back, as its container's waiting state says. */
const waitingReason = (pod: Pod) => {
  const state = pod.status.containerStatuses?.[0]?.state as { waiting?: { reason?: string } } | undefined;
  return state?.waiting?.reason;
};

/**
 * Binds 50 Pods to the account's node at once on a slow cloud, samples the account's live cloud pods all
 * along, and waits until every Pod is Running or held for `reason`.
 */
async function burst(account: (typeof ACCOUNTS)[keyof typeof ACCOUNTS], reason: string) {
  const node = `gpucloud-${account.config}`;
  const live = () => liveCloudPods(stack.sim()).filter((p) => p.org === account.config);
  const createsBefore = cloudCreates(stack.sim()).length;
  let mostLive = 0;
  const sampler = setInterval(() => {
    mostLive = Math.max(mostLive, live().length);
  }, 20);
  stack.sim().faults.set({ latencyMs: 300, operations: ['pods.create'] });
  try {
    await Promise.all(
      Array.from({ length: BURST }, (_, index) =>
        admin.request(z.unknown(), {
          method: 'POST',
          path: collectionPath(pods, account.namespace),
          body: podOn(`burst-${index}`, node),
        }),
      ),
    );
    const settled = await poll(
      () => listPods(admin, account.namespace),
      (items) =>
        items.length === BURST &&
        items.filter(running).length === FITS &&
        items.filter((pod) => waitingReason(pod) === reason).length === BURST - FITS,
      `${FITS} Running, the rest held for ${reason}`,
      120_000,
    );
    return {
      settled,
      mostLive: Math.max(mostLive, live().length),
      live: live(),
      creates: cloudCreates(stack.sim()).length - createsBefore,
    };
  } finally {
    clearInterval(sampler);
    stack.sim().faults.set({ latencyMs: 0, operations: null });
  }
}

describe('a burst of 50 Pods on the virtual node against a slow cloud', () => {
  before(async () => {
    const cluster = stack.cluster();
    admin = cluster.client;
    for (const { namespace } of Object.values(ACCOUNTS)) {
      await cluster.ensureNamespace(namespace);
      // Pod admission wants the namespace's default ServiceAccount; no controller-manager makes it here.
      await createDefaultServiceAccount(admin, namespace);
    }
    await cluster.ensureNamespace(KEY_NS);
    for (const { config, key } of Object.values(ACCOUNTS)) {
      await createAccountKey(admin, KEY_NS, config, key);
    }
    const base = (account: (typeof ACCOUNTS)[keyof typeof ACCOUNTS]) =>
      virtualNodeProviderConfig({
        name: account.config,
        namespace: account.namespace,
        apiUrl: stack.sim().url,
        keyNamespace: KEY_NS,
      });
    const gpus = base(ACCOUNTS.gpus);
    await cluster.create(resources.providerConfig, '', {
      ...gpus,
      spec: { ...gpus.spec, guardrails: { gpuTypes: [GPU], maxLiveGpus: FITS } },
    });
    const price = findModel(GPU)?.pricePerGpuPerHour ?? Number.NaN;
    const money = base(ACCOUNTS.money);
    await cluster.create(resources.providerConfig, '', {
      ...money,
      spec: {
        ...money.spec,
        // Ten one-GPU pods at the offer's price fit exactly; an eleventh would go over.
        guardrails: { gpuTypes: [GPU], budgets: [{ name: 'burst-cap', maxSpendPerHour: price * FITS }] },
      },
    });
    operator = await startOperator(stack.plane(), stack.sim(), {
      apiKey: 'operator-default-key',
      flags: ['--virtual-nodes', 'true'],
    });
    for (const { config } of Object.values(ACCOUNTS)) await waitForNodeReady(admin, `gpucloud-${config}`);
  });
  after(async () => {
    await operator?.stop();
  });

  test('maxLiveGpus 10: exactly 10 cloud pods made, never more live, the other 40 held GuardrailExceeded', async () => {
    const result = await burst(ACCOUNTS.gpus, 'GuardrailExceeded');
    assert.equal(result.creates, FITS, 'one create per Pod that fits, none for the rest');
    assert.ok(result.mostLive <= FITS, `at most ${FITS} live at any look, saw ${result.mostLive}`);
    assert.deepEqual(
      result.live.map((p) => p.name).sort(),
      result.settled
        .filter(running)
        .map((pod) => pod.metadata.name)
        .sort(),
      'the cloud pods are the Running Pods’',
    );
  });

  test('a budget that fits 10: exactly 10 cloud pods made, never more live, the other 40 held BudgetExceeded', async () => {
    const result = await burst(ACCOUNTS.money, 'BudgetExceeded');
    assert.equal(result.creates, FITS, 'one create per Pod that fits, none for the rest');
    assert.ok(result.mostLive <= FITS, `at most ${FITS} live at any look, saw ${result.mostLive}`);
    assert.equal(result.live.length, FITS);
    assert.ok(
      result.live.every((p) => p.gpuType === GPU),
      'each at the price the budget was counted at',
    );
  });
});
