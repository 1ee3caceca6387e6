import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRequest } from '../../src/tenant-api/request-path.ts';
import { TenantApiError } from '../../src/tenant-api/status.ts';

const base = '/apis/tenant.gpucloud.io/v1alpha1/namespaces';

test('a URL and a method make the attributes RBAC and the SubjectAccessReview name', () => {
  const log = parseRequest('GET', `${base}/team-a/gpupods/trainer/log?follow=true`);
  assert.deepEqual(log.attributes, {
    verb: 'get',
    namespace: 'team-a',
    resource: 'gpupods',
    subresource: 'log',
    name: 'trainer',
  });
  assert.equal(log.query.get('follow'), 'true');
  assert.equal(log.item, undefined);
  const submit = parseRequest('POST', `${base}/team-a/serverlessendpoints/queue/tasks`);
  assert.equal(submit.attributes.verb, 'create');
  const one = parseRequest('GET', `${base}/team-a/serverlessendpoints/queue/tasks/run_1`);
  assert.equal(one.item, 'run_1');
  assert.equal(one.attributes.verb, 'get');
});

test('anything else is a 404 or a 405 that says what is served', () => {
  const code = (method: string, url: string) => {
    try {
      parseRequest(method, url);
      return 200;
    } catch (error) {
      assert.ok(error instanceof TenantApiError);
      return error.code;
    }
  };
  assert.equal(code('GET', `${base}/team-a/gpuvms/box/log`), 404);
  assert.equal(code('GET', `${base}/team-a/gpupods/trainer/exec`), 404);
  assert.equal(code('GET', `${base}/team-a/gpupods/trainer/log/extra`), 404);
  assert.equal(code('GET', `${base}/Team_A/gpupods/trainer/log`), 404);
  assert.equal(code('GET', `${base}/team-a/gpupods/trainer/metrics/x/y`), 404);
  assert.equal(code('GET', '/apis/gpucloud.io/v1alpha1/namespaces/a/gpupods/b/log'), 404);
  assert.equal(code('GET', `${base}/team-a/serverlessendpoints/queue/tasks/not-an-id`), 404);
  assert.equal(code('POST', `${base}/team-a/gpupods/trainer/log`), 405);
  assert.equal(code('DELETE', `${base}/team-a/serverlessendpoints/queue/tasks/run_1`), 405);
  assert.equal(code('POST', `${base}/team-a/serverlessendpoints/queue/tasks/run_1`), 405);
});
