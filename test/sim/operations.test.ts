import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allOperations } from '../../src/api/operations.ts';
import { endpointRequest, podRequest, useSimulator } from './helpers.ts';

const sim = useSimulator({ transitionMs: 0 });

interface Sample {
  readonly params?: Record<string, string>;
  readonly query?: string;
  readonly body?: unknown;
}

/** Ids of the resources the samples act on, made by the samples that come before. */
const made = { pod: '', legacyPod: '', vm: '', legacyVm: '', endpoint: '' };

/** One successful call of every operation, in an order where each finds what it needs. */
const samples: Array<[string, () => Sample]> = [
  ['vms.types', () => ({})],
  ['legacy.vms.types', () => ({})],
  ['vms.create', () => ({ body: { vmTypeId: 101, region: 'us-east-1', name: 'every', isSpot: false } })],
  ['vms.get', () => ({ params: { id: made.vm } })],
  ['vms.list', () => ({ query: '?page=1&size=5&status=RUNNING' })],
  ['vms.update', () => ({ params: { id: made.vm }, body: { name: 'renamed' } })],
  ['legacy.vms.create', () => ({ body: { vmTypeId: 101, region: 'us-east-1', nickName: 'old', isSpot: 0 } })],
  ['legacy.vms.get', () => ({ params: { vmId: made.legacyVm } })],
  ['legacy.vms.list', () => ({ body: { pageNumber: 1, pageSize: 10, search: { status: 'RUNNING' } } })],
  ['pods.searchGpus', () => ({ body: { gpuCounts: [1, 2], isSpot: true } })],
  ['pods.create', () => ({ body: podRequest('every', { volumes: [{ id: 'vol1', mountPath: '/data' }] }) })],
  ['pods.get', () => ({ params: { id: made.pod } })],
  ['pods.list', () => ({ query: '?statusList=RUNNING' })],
  ['pods.logs', () => ({ params: { id: made.pod }, query: '?type=SYSTEM&limit=5' })],
  ['pods.runtime', () => ({ params: { id: made.pod } })],
  ['metrics.cpu', () => ({ params: { pod_id: made.pod } })],
  ['metrics.gpu', () => ({ params: { pod_id: made.pod }, query: '?step=5m' })],
  ['metrics.memory', () => ({ params: { pod_id: made.pod } })],
  ['metrics.gpuMemory', () => ({ params: { pod_id: made.pod } })],
  ['metrics.storage', () => ({ params: { pod_id: made.pod } })],
  ['pods.pause', () => ({ params: { id: made.pod } })],
  ['pods.resume', () => ({ params: { id: made.pod } })],
  [
    'legacy.pods.create',
    () => ({
      body: {
        podName: 'old',
        image: 'img',
        gpuType: 'NVIDIA L40S',
        gpuCount: 1,
        persistentVolumes: [
          {
            id: 'v',
            name: 'v',
            volumeType: 'CloudStorage',
            mountMode: 'Data',
            volumeSize: 10,
            volumePrice: 0.1,
            mountPath: '/v',
            cloudStorageType: 'R2',
            systemVolumeType: 'Ceph',
          },
        ],
      },
    }),
  ],
  ['legacy.pods.get', () => ({ params: { podId: made.legacyPod } })],
  ['legacy.pods.list', () => ({})],
  ['legacy.pods.pause', () => ({ params: { podId: made.legacyPod } })],
  ['legacy.pods.resume', () => ({ params: { podId: made.legacyPod } })],
  [
    'serverless.create',
    () => ({
      body: endpointRequest('every', {
        webhook: 'http://127.0.0.1:9/x',
        envVars: [{ key: 'A', value: 'b' }],
      }),
    }),
  ],
  ['serverless.list', () => ({ query: '?statusList=RUNNING' })],
  ['serverless.get', () => ({ params: { id: made.endpoint } })],
  ['serverless.update', () => ({ params: { id: made.endpoint }, body: { image: 'img:2', workers: 2 } })],
  ['serverless.scaleWorkers', () => ({ params: { id: made.endpoint }, query: '?count=1' })],
  [
    'serverless.tasks.submit',
    () => ({ params: { id: made.endpoint }, body: { taskId: 't1', input: { a: 1 } } }),
  ],
  ['serverless.tasks.list', () => ({ params: { id: made.endpoint }, query: '?page=1&size=10' })],
  ['serverless.tasks.count', () => ({ params: { id: made.endpoint } })],
  ['serverless.tasks.get', () => ({ params: { id: made.endpoint, taskId: 't1' } })],
  ['serverless.stop', () => ({ params: { id: made.endpoint } })],
  ['serverless.start', () => ({ params: { id: made.endpoint } })],
  ['serverless.delete', () => ({ params: { id: made.endpoint } })],
  ['pods.delete', () => ({ params: { id: made.pod } })],
  ['legacy.pods.delete', () => ({ params: { podId: made.legacyPod } })],
  ['vms.terminate', () => ({ params: { id: made.vm } })],
  ['legacy.vms.terminate', () => ({ params: { vmId: made.legacyVm } })],
];

/** Remembers the ids the create calls answered. */
function remember(name: string, data: unknown): void {
  const id = (data as { id?: unknown } | null)?.id;
  if (name === 'vms.create') made.vm = String(id);
  if (name === 'legacy.vms.create') made.legacyVm = String(id);
  if (name === 'pods.create') made.pod = String(id);
  if (name === 'legacy.pods.create') made.legacyPod = String(data);
  if (name === 'serverless.create') made.endpoint = String(id);
}

describe('every operation of the API', () => {
  it('has one sample here', () => {
    assert.deepEqual(samples.map(([name]) => name).sort(), allOperations.map((op) => op.name).sort());
  });

  it('answers success, and data that decodes with the operation’s own schema', async () => {
    for (const [name, sample] of samples) {
      const operation = allOperations.find((op) => op.name === name);
      assert.ok(operation, name);
      const { params = {}, query = '', body } = sample();
      const path = operation.path.replace(/\{(\w+)\}/g, (_, key: string) =>
        encodeURIComponent(params[key] ?? ''),
      );
      const data = await sim.ok<unknown>(operation.method, `${path}${query}`, { body });
      const decoded = operation.data.safeParse(data);
      assert.ok(decoded.success, `${name}: ${decoded.error?.message}`);
      remember(name, data);
    }
    const calls = (await sim.running()).calls.snapshot();
    assert.equal(calls.total, allOperations.length);
    assert.ok(Object.values(calls.byOperation).every((count) => count === 1));
  });
});
