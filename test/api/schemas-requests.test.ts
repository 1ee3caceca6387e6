import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { z } from 'zod';
import { operations } from '../../src/api/operations.ts';

/*
 * Requests: every rule the spec states is checked on the application form (what the client encodes)
 * and on the wire form (what the simulator decodes), each with a message that tells a user what to fix.
 */

/** The client's side: the app value is refused, and some issue's message matches `message`. */
function rejects(schema: z.ZodType, value: unknown, message: RegExp): void {
  const result = schema.safeEncode(value);
  assert.equal(result.success, false, `expected ${JSON.stringify(value)} to be rejected`);
  const messages = result.error?.issues.map((issue) => issue.message) ?? [];
  assert.ok(
    messages.some((text) => message.test(text)),
    `no message matches ${message}: ${messages.join(' | ')}`,
  );
}

function accepts(schema: z.ZodType, value: unknown): unknown {
  const result = schema.safeEncode(value);
  assert.equal(result.success, true, result.error?.message);
  return result.data;
}

const podRequest = { name: 'notebook', image: 'pytorch:2', gpuType: 'A100', gpuCount: 1 };
const endpointRequest = {
  name: 'sdxl',
  image: 'sdxl:1',
  resources: [{ region: 'us-east-1', gpuType: 'L40S', gpuCount: 1 }],
};

describe('pod create (v2)', () => {
  const body = operations.pods.create.body;

  it('accepts a minimal request and a full one', () => {
    accepts(body, podRequest);
    accepts(body, {
      ...podRequest,
      regions: ['eu-west-1'],
      containerRegistryAuthId: '12',
      imageRegistry: 'registry.example.net',
      imagePublicType: 'PRIVATE',
      resourceType: 'GPU',
      gpuCount: 8,
      isSpot: true,
      maxPrice: 3.5,
      environmentVars: [{ key: 'A', value: '1' }],
      expose: [{ port: 8888, protocol: 'HTTP' }],
      volumes: [{ id: 'vol-1', mountPath: '/data' }],
      callbackUrl: 'https://hooks.example.net/pods',
    });
  });

  it('name and image are 1 to 255 characters', () => {
    rejects(body, { ...podRequest, name: '' }, /name must not be empty/);
    rejects(body, { ...podRequest, name: 'n'.repeat(256) }, /name must be 1 to 255 characters/);
    rejects(body, { ...podRequest, image: '' }, /image must not be empty/);
    rejects(body, { ...podRequest, image: 'i'.repeat(256) }, /image must be 1 to 255 characters/);
    accepts(body, { ...podRequest, name: 'n'.repeat(255) });
  });

  it('gpuCount is a power of 2', () => {
    for (const gpuCount of [0, 3, 6, -2, 1.5]) {
      rejects(body, { ...podRequest, gpuCount }, /gpuCount must be/);
    }
    for (const gpuCount of [1, 2, 4, 16]) accepts(body, { ...podRequest, gpuCount });
  });

  it('maxPrice only with isSpot true', () => {
    rejects(body, { ...podRequest, maxPrice: 2 }, /maxPrice is valid only for spot pods/);
    rejects(body, { ...podRequest, isSpot: false, maxPrice: 2 }, /maxPrice is valid only for spot pods/);
    accepts(body, { ...podRequest, isSpot: true, maxPrice: 2 });
  });

  it('imageRegistry at most 255, callbackUrl an http(s) URL of at most 512', () => {
    rejects(body, { ...podRequest, imageRegistry: 'r'.repeat(256) }, /imageRegistry must be at most 255/);
    rejects(body, { ...podRequest, callbackUrl: 'ftp://x' }, /callbackUrl must be an http/);
    const long = `https://h.example.net/${'p'.repeat(512)}`;
    rejects(body, { ...podRequest, callbackUrl: long }, /callbackUrl must be at most 512/);
  });

  it('gpuType is required, enums are closed, ports are 1 to 65535', () => {
    rejects(body, { ...podRequest, gpuType: '' }, /gpuType must not be empty/);
    rejects(body, { ...podRequest, resourceType: 'TPU' }, /GPU|CPU/);
    rejects(body, { ...podRequest, expose: [{ port: 0, protocol: 'HTTP' }] }, /between 1 and 65535/);
    rejects(body, { ...podRequest, expose: [{ port: 65536, protocol: 'HTTP' }] }, /between 1 and 65535/);
  });

  it('a misspelt field is refused instead of being dropped silently', () => {
    rejects(body, { ...podRequest, gpuCuont: 2 }, /gpuCuont/);
  });

  it('the credential id is a cloud id, sent as a string', () => {
    rejects(body, { ...podRequest, containerRegistryAuthId: 'abc' }, /cloud id/);
    const wire = accepts(body, { ...podRequest, containerRegistryAuthId: '12' });
    assert.deepEqual(wire, { ...podRequest, containerRegistryAuthId: '12' });
  });

  it('the simulator applies the same rules to the wire form', () => {
    assert.equal(body.safeDecode({ ...podRequest, gpuCount: 3 }).success, false);
    assert.equal(body.safeDecode({ ...podRequest, maxPrice: 1 }).success, false);
    assert.deepEqual(body.decode({ ...podRequest, containerRegistryAuthId: 12 }), {
      ...podRequest,
      containerRegistryAuthId: '12',
    });
  });
});

describe('pod create (v1)', () => {
  const body = operations.legacy.pods.create.body;
  const request = { podName: 'nb', image: 'img', gpuType: 'A100', gpuCount: 2 };

  it('shares the v2 rules under its own field names', () => {
    accepts(body, request);
    rejects(body, { ...request, podName: '' }, /podName must not be empty/);
    rejects(body, { ...request, gpuCount: 5 }, /power of 2/);
    rejects(body, { ...request, maxPrice: 1 }, /maxPrice is valid only for spot pods/);
  });

  it('sends the credential id as an integer', () => {
    assert.deepEqual(accepts(body, { ...request, credentialId: '77' }), { ...request, credentialId: 77 });
  });
});

describe('VMs', () => {
  it('create: region and name must not be empty, isSpot is required', () => {
    const body = operations.vms.create.body;
    const request = { vmTypeId: 3, region: 'us-east-1', name: 'trainer', isSpot: false };
    accepts(body, request);
    rejects(body, { ...request, name: '' }, /name must not be empty/);
    rejects(body, { ...request, region: '' }, /region must not be empty/);
    rejects(body, { ...request, isSpot: undefined }, /isSpot is required/);
  });

  it('update: name is 1 to 255 characters', () => {
    const body = operations.vms.update.body;
    accepts(body, { name: 'renamed' });
    rejects(body, { name: 'n'.repeat(256) }, /name must be 1 to 255 characters/);
    rejects(body, { name: '' }, /name must not be empty/);
  });

  it('list: page is 1-based and size is 1 to 100; both travel as strings', () => {
    const query = operations.vms.list.query;
    rejects(query, { page: 0 }, /page is 1-based/);
    rejects(query, { size: 101 }, /page size must be at most 100/);
    rejects(query, { size: 0 }, /page size must be at least 1/);
    assert.deepEqual(accepts(query, { page: 2, size: 100, status: 'RUNNING' }), {
      page: '2',
      size: '100',
      status: 'RUNNING',
    });
  });

  it('v1 create: nickName 1 to 255, isSpot sent as 0 or 1', () => {
    const body = operations.legacy.vms.create.body;
    const request = { vmTypeId: 3, region: 'us-east-1', nickName: 'n', isSpot: true };
    assert.deepEqual(accepts(body, request), { ...request, isSpot: 1 });
    rejects(body, { ...request, nickName: 'n'.repeat(256) }, /nickName must be 1 to 255 characters/);
    assert.equal(body.safeParse({ ...request, isSpot: 2 }).success, false);
  });

  it('v1 list: pageNumber and pageSize at least 1', () => {
    const body = operations.legacy.vms.list.body;
    accepts(body, { pageNumber: 1, pageSize: 10, search: { status: 'RUNNING' } });
    rejects(body, { pageNumber: 0, pageSize: 10 }, /page is 1-based/);
    rejects(body, { pageNumber: 1, pageSize: 0 }, /page size must be at least 1/);
  });

  it('path ids are cloud ids', () => {
    rejects(operations.vms.get.params, { id: 'abc' }, /cloud id/);
    rejects(operations.legacy.vms.get.params, { vmId: '' }, /cloud id/);
  });
});

describe('serverless', () => {
  const body = operations.serverless.create.body;

  it('endpoint name: 1 to 20 characters, starts with a letter, A-Z a-z 0-9 @ . _ -', () => {
    accepts(body, endpointRequest);
    accepts(body, { ...endpointRequest, name: 'a@b.c_d-e' });
    accepts(body, { ...endpointRequest, name: 'a'.repeat(20) });
    for (const name of ['', '1abc', '_abc', 'a'.repeat(21), 'has space', 'slash/no']) {
      rejects(body, { ...endpointRequest, name }, /name must be 1 to 20 characters, start with a letter/);
    }
  });

  it('webhook is an http(s) URL; expose port 1 to 65535; at least one resource', () => {
    rejects(body, { ...endpointRequest, webhook: 'mailto:x@y' }, /webhook must be an http/);
    accepts(body, { ...endpointRequest, webhook: 'http://hooks.example.net' });
    rejects(body, { ...endpointRequest, expose: { port: 70000, protocol: 'http' } }, /between 1 and 65535/);
    rejects(body, { ...endpointRequest, resources: [] }, /at least one/);
    rejects(body, { ...endpointRequest, serviceMode: 'BATCH' }, /ALB|QUEUE|CUSTOM/);
  });

  it('update is partial and keeps the rules', () => {
    const update = operations.serverless.update.body;
    accepts(update, { workers: 3 });
    accepts(update, {});
    rejects(update, { name: '9lives' }, /start with a letter/);
    rejects(update, { workers: -1 }, /workers must not be negative/);
  });

  it('list filter statusList: comma-separated or repeated on the wire, joined when sent', () => {
    const query = operations.serverless.list.query;
    assert.deepEqual(query.decode({ statusList: ['RUNNING,STOPPED', 'FAILED'] }), {
      statusList: ['RUNNING', 'STOPPED', 'FAILED'],
    });
    assert.deepEqual(query.encode({ statusList: ['RUNNING', 'STOPPED'] }), { statusList: 'RUNNING,STOPPED' });
  });

  it('worker count is a non-negative integer, sent as a string', () => {
    const query = operations.serverless.scaleWorkers.query;
    assert.deepEqual(accepts(query, { count: 4 }), { count: '4' });
    rejects(query, { count: -1 }, /worker count must not be negative/);
    assert.equal(query.safeDecode({ count: 'many' }).success, false);
  });

  it('task submit: taskId characters, workerPort range, webhook pattern, processUri a path', () => {
    const submit = operations.serverless.tasks.submit.body;
    accepts(submit, {
      taskId: 'job_01',
      input: { prompt: 'cat' },
      workerPort: 8000,
      processUri: '/run',
      webhook: 'https://hooks.example.net',
      webhookAuthKey: 'k',
    });
    accepts(submit, { input: null });
    rejects(submit, { taskId: 'job-01', input: {} }, /taskId may contain only/);
    rejects(submit, { workerPort: 0, input: {} }, /workerPort must be between 1 and 65535/);
    rejects(submit, { workerPort: 65536, input: {} }, /workerPort must be between 1 and 65535/);
    rejects(submit, { webhook: 'hooks.example.net', input: {} }, /webhook must be an http/);
    rejects(submit, { processUri: 'run', input: {} }, /processUri must be a path/);
  });

  it('task list: status filter is one of the task statuses', () => {
    const query = operations.serverless.tasks.list.query;
    accepts(query, { status: 'SUCCESS', page: 1, size: 10 });
    rejects(query, { status: 'DONE' }, /PROCESSING|DELIVERED|SUCCESS|FAILED/);
  });

  it('task get: the taskId path parameter is not empty and has no other characters', () => {
    const params = operations.serverless.tasks.get.params;
    rejects(params, { id: '1', taskId: '' }, /taskId must not be empty/);
    rejects(params, { id: '1', taskId: 'a/b' }, /taskId may contain only/);
  });
});

describe('metrics', () => {
  const query = operations.metrics.cpu.query;
  const hour = 3_600_000;

  it('step is one of the resolution steps', () => {
    rejects(query, { step: '2m' }, /step must be one of 30s, 5m, 15m, 1h, 4h, 1d/);
  });

  it('a window longer than the step allows is rejected', () => {
    const cases: ReadonlyArray<[string, number]> = [
      ['30s', 3 * hour],
      ['5m', 12 * hour],
      ['15m', 48 * hour],
      ['1h', 7 * 24 * hour],
      ['4h', 30 * 24 * hour],
      ['1d', 90 * 24 * hour],
    ];
    for (const [step, max] of cases) {
      accepts(query, { start: 0, end: max, step });
      rejects(query, { start: 0, end: max + 1, step }, new RegExp(`longer than the .* step ${step} allows`));
    }
  });

  it('the default step is 30s, and a one-sided window needs no check', () => {
    rejects(query, { start: 0, end: 3 * hour + 1 }, /step 30s allows/);
    accepts(query, { start: 0 });
    accepts(query, { end: 100 * 24 * hour });
    accepts(query, {});
  });

  it('end must be after start; times travel as strings', () => {
    rejects(query, { start: 10, end: 10 }, /end must be after start/);
    assert.deepEqual(accepts(query, { start: 1, end: 2, step: '5m' }), { start: '1', end: '2', step: '5m' });
  });
});

describe('pod logs', () => {
  it('type is CONTAINER or SYSTEM, limit positive, startTime not after endTime', () => {
    const query = operations.pods.logs.query;
    accepts(query, { type: 'SYSTEM', limit: 100, cursor: 'c1', startTime: 1, endTime: 2, keyword: 'err' });
    rejects(query, { type: 'KERNEL' }, /CONTAINER|SYSTEM/);
    rejects(query, { limit: 0 }, /limit must be at least 1/);
    rejects(query, { startTime: 5, endTime: 4 }, /startTime must not be after endTime/);
  });

  it('the body is absent or an empty object', () => {
    const body = operations.pods.logs.body;
    assert.equal(body.safeDecode(undefined).success, true);
    assert.equal(body.safeDecode({}).success, true);
    assert.equal(body.safeParse({ type: 'CONTAINER' }).success, false);
  });
});

describe('GPU search', () => {
  it('all fields are optional; page size is capped', () => {
    const body = operations.pods.searchGpus.body;
    assert.deepEqual(accepts(body, {}), {});
    assert.deepEqual(accepts(body, { page: 1, size: 50, gpuCounts: [1, 2] }), {
      page: '1',
      size: '50',
      gpuCounts: [1, 2],
    });
    rejects(body, { size: 500 }, /page size must be at most 100/);
  });
});
