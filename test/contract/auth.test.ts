import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiCode } from '../../src/api/codes.ts';
import type { Operation } from '../../src/api/operation.ts';
import { allOperations } from '../../src/api/operations.ts';
import { rejectsWithCode, useContract } from './harness.ts';

const env = useContract();

/** Bodies that pass the client's checks, for the operations whose body has required fields. */
const bodies: Readonly<Record<string, unknown>> = {
  'vms.create': { vmTypeId: 1, region: 'r', name: 'n', isSpot: false },
  'vms.update': { name: 'n' },
  'pods.create': { name: 'n', image: 'i', gpuType: 'g', gpuCount: 1 },
  'pods.searchGpus': {},
  'serverless.create': { name: 'n', image: 'i', resources: [{ region: 'r', gpuType: 'g', gpuCount: 1 }] },
  'serverless.update': {},
  'serverless.tasks.submit': { input: {} },
  'legacy.vms.create': { vmTypeId: 1, region: 'r', nickName: 'n', isSpot: false },
  'legacy.vms.list': { pageNumber: 1, pageSize: 10 },
  'legacy.pods.create': { podName: 'n', image: 'i', gpuType: 'g', gpuCount: 1 },
};

const queries: Readonly<Record<string, unknown>> = { 'serverless.scaleWorkers': { count: 1 } };

/** A well-formed input for any operation: every path placeholder filled with a plausible id. */
function sampleInput(operation: Operation) {
  const names = [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? '');
  return {
    params: Object.fromEntries(names.map((name) => [name, name === 'taskId' ? 'task_1' : '1'])),
    query: queries[operation.name] ?? {},
    body: bodies[operation.name],
  };
}

describe('authentication against the simulator', () => {
  it('every one of the 43 operations answers HTTP 401 to a key the service does not know', async () => {
    const unknown = env.clientWithKey('not-a-key');
    for (const operation of allOperations) {
      const error = await rejectsWithCode(unknown.invoke(operation, sampleInput(operation)), {
        code: ApiCode.InvalidRequest,
        httpStatus: 401,
        kind: 'terminal',
      });
      assert.equal(error.operation, operation.name);
      assert.ok(!error.message.includes('not-a-key'), 'the key never appears in an error');
    }
    const { byOperation } = env.sim.calls.snapshot();
    assert.deepEqual(
      allOperations
        .filter((operation) => byOperation[operation.name] !== 1)
        .map((operation) => operation.name),
      [],
      'each operation reached the service exactly once: a 401 is not retried',
    );
  });

  it('a request without the x-api-key header is 401', async () => {
    for (const path of ['/v2/vms', '/v2/pods', '/v2/serverless', '/openapi/v1/pods/list']) {
      const answer = await env.raw('GET', path, { apiKey: null });
      assert.equal(answer.status, 401, path);
    }
  });
});
