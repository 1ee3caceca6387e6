import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { leases, objectPath } from '../../src/kube/resource-type.ts';
import { freePorts, kubeletApiFiles, kubeletGet } from '../support/kubelet-api.ts';
import { API_KEY, type RunningOperator, resources, startOperator, useStack } from '../support/operator.ts';
import { poll } from '../support/until.ts';

// Two operators under leader election: only the leader maintains the virtual node and serves its kubelet
// API, and the other takes it over (its Lease keeps being renewed, its port served again, the same one)
// when the leader stops.
const NS = 'vnode-leader';
const stack = useStack();
const NODE = 'gpucloud-shared';
const leaseSchema = z.looseObject({ spec: z.looseObject({ renewTime: z.string() }) });

/** The times this operator opened a node's kubelet API port: none unless it leads. */
const portsOpened = (op: RunningOperator) =>
  op.logs.filter((line) => line.includes('"msg":"virtual node: kubelet API serving"')).length;

const summarySchema = z.object({ node: z.object({ nodeName: z.string() }) });

/** Reconciles of the virtual node controller this operator ran: none unless it leads. */
const nodeReconciles = (op: RunningOperator) =>
  op.logs.filter(
    (line) => line.includes('"controller":"virtual-node"') && line.includes('"msg":"reconcile finished"'),
  ).length;

describe('the virtual node under leader election', () => {
  test('only the leader maintains it; the standby takes over when the leader stops', async () => {
    const cluster = stack.cluster();
    await cluster.ensureNamespace(NS);
    await cluster.create(resources.secret, NS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'key' },
      stringData: { 'api-key': API_KEY },
    });
    // Both replicas may serve the node on the one port of the range: only the leader does.
    const port = await freePorts(1);
    const files = await kubeletApiFiles(stack.plane(), ['127.0.0.1']);
    const flags = [
      '--virtual-nodes',
      'true',
      '--leader-elect',
      'true',
      '--lease-namespace',
      NS,
      '--virtual-node-ports',
      String(port),
      ...files.flags,
    ];
    const stats = () =>
      kubeletGet('127.0.0.1', port, '/stats/summary', files.caPem, files.apiserverClient).then(
        (answer) => answer,
        () => ({ status: 0, body: '' }),
      );
    const a = await startOperator(stack.plane(), stack.sim(), { flags });
    const b = await startOperator(stack.plane(), stack.sim(), { flags });
    try {
      await cluster.create(resources.providerConfig, '', {
        apiVersion: 'gpucloud.io/v1alpha1',
        kind: 'ProviderConfig',
        metadata: { name: 'shared' },
        spec: {
          apiUrl: stack.sim().url,
          credentials: { secretRef: { namespace: NS, name: 'key', key: 'api-key' } },
          namespaces: { names: [NS] },
          virtualNode: { enabled: true },
        },
      });
      const lease = () =>
        cluster.client.request(leaseSchema, {
          method: 'GET',
          path: objectPath(leases, { namespace: 'kube-node-lease', name: NODE }),
        });
      const first = await poll(
        () => lease().catch(() => undefined),
        (found) => found !== undefined,
        'the node Lease',
      );
      // The reconcile that wrote the Lease logs its end just after.
      await poll(
        async () => nodeReconciles(a) + nodeReconciles(b),
        (count) => count > 0,
        'a reconcile of the node logged',
      );
      const [leader, standby] = nodeReconciles(a) > 0 ? [a, b] : [b, a];
      assert.equal(nodeReconciles(standby), 0, 'the standby never reconciled the node');
      const served = await poll(stats, (answer) => answer.status === 200, 'the node served on its port');
      assert.equal(summarySchema.parse(JSON.parse(served.body)).node.nodeName, NODE);
      assert.equal(portsOpened(leader), 1);
      assert.equal(portsOpened(standby), 0, 'the standby serves nothing');

      await leader.stop();
      const stoppedAt = Date.now();
      const renewed = await poll(
        lease,
        (now) => Date.parse(now.spec.renewTime) > stoppedAt,
        'the Lease renewed by the new leader',
        60_000,
      );
      assert.notEqual(renewed.spec.renewTime, first?.spec.renewTime);
      assert.ok(nodeReconciles(standby) > 0, 'the standby took the node over');
      const again = await poll(
        stats,
        (answer) => answer.status === 200,
        'the node served again, on its port',
      );
      assert.equal(summarySchema.parse(JSON.parse(again.body)).node.nodeName, NODE);
      assert.equal(portsOpened(standby), 1, 'by the new leader');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
