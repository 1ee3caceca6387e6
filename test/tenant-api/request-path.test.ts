import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ServingError } from '../../src/serving/status.ts';
import { parseRequest } from '../../src/tenant-api/request-path.ts';

const base = '/apis/tenant.gpucloud.io/v1alpha1/namespaces';

test('a URL and a method make the attributes RBAC and the SubjectAccessReview name', () => {
  const log = parseRequest('GET', `${base}/team-a/gpupods/trainer/log?follow=true`);
  assert.deepEqual(log.attributes, {
    verb: 'get',
    group: 'tenant.gpucloud.io',
    namespace: 'team-a',
    resource: 'gpupods',
    subresource: 'log',
    name: 'trainer',
  });
  assert.equal(log.query.get('follow'), 'true');
  assert.equal(log.item, undefined);
  // Kubernetes' standard parameters are read apart from the subresource's own.
  const standard = parseRequest(
    'GET',
    `${base}/team-a/gpupods/trainer/log?timeout=20s500ms&pretty=1&limit=5`,
  );
  assert.deepEqual(standard.standard, { timeout: 20_500, pretty: true });
  assert.deepEqual([...standard.query], [['limit', '5']]);
  // A timeout of 0, or past the apiserver's maximum, is the maximum, as the apiserver reads it.
  assert.equal(parseRequest('GET', `${base}/a/gpupods/b/log?timeout=0`).standard.timeout, 60_000);
  assert.equal(parseRequest('GET', `${base}/a/gpupods/b/log?timeout=2h`).standard.timeout, 60_000);
  assert.equal(parseRequest('GET', `${base}/a/gpupods/b/log?timeout=250ms`).standard.timeout, 250);
  const submit = parseRequest('POST', `${base}/team-a/serverlessendpoints/queue/tasks`);
  assert.equal(submit.attributes.verb, 'create');
  const one = parseRequest('GET', `${base}/team-a/serverlessendpoints/queue/tasks/run_1`);
  assert.equal(one.item, 'run_1');
  assert.equal(one.attributes.verb, 'get');
});

const code = (method: string, url: string) => {
  try {
    parseRequest(method, url);
    return 200;
  } catch (error) {
    assert.ok(error instanceof ServingError);
    return error.code;
  }
};

test('anything else is a 404 or a 405 that says what is served', () => {
  assert.equal(code('GET', `${base}/team-a/gpuvms/box/log`), 404);
  assert.equal(code('GET', `${base}/team-a/gpupods/trainer/exec`), 404);
  assert.equal(code('GET', `${base}/team-a/gpupods/trainer/log/extra`), 404);
  assert.equal(code('GET', `${base}/team-a/gpupods/trainer/metrics/x/y`), 404);
  assert.equal(code('GET', '/apis/gpucloud.io/v1alpha1/namespaces/a/gpupods/b/log'), 404);
  assert.equal(code('POST', `${base}/team-a/gpupods/trainer/log`), 405);
  assert.equal(code('DELETE', `${base}/team-a/serverlessendpoints/queue/tasks/run_1`), 405);
  assert.equal(code('POST', `${base}/team-a/serverlessendpoints/queue/tasks/run_1`), 405);
});

test('a name, a task id or an encoding no Kubernetes client would send is a 400 that names it, never a throw', () => {
  const message = (url: string) => {
    try {
      parseRequest('GET', url);
      return '';
    } catch (error) {
      assert.ok(error instanceof ServingError);
      assert.equal(error.code, 400, error.message);
      return error.message;
    }
  };
  assert.match(message(`${base}/team-a/gpupods/%FF/log`), /"%FF" is not valid percent-encoding/);
  assert.match(message(`${base}/team-a/gpupods/%/log`), /"%" is not valid percent-encoding/);
  assert.match(message(`${base}/%E0%A4%A/gpupods/x/log`), /not valid percent-encoding/);
  assert.match(message(`${base}/Team_A/gpupods/trainer/log`), /namespace "Team_A": a Kubernetes name/);
  assert.match(message(`${base}/team-a/gpupods/a%2Fb/log`), /name "a\/b": a Kubernetes name/);
  assert.match(message(`${base}/team-a/gpupods/${'a'.repeat(254)}/log`), /at most 253 characters/);
  assert.match(
    message(`${base}/team-a/serverlessendpoints/queue/tasks/not-an-id`),
    /task id "not-an-id": only the characters A-Z a-z 0-9 _, 1 to 128/,
  );
  assert.match(message(`${base}/team-a/serverlessendpoints/queue/tasks/${'a'.repeat(129)}`), /1 to 128/);
  assert.match(message(`${base}/a/gpupods/b/log?timeout=soon`), /timeout: must be a duration such as 30s/);
  assert.match(message(`${base}/a/gpupods/b/log?pretty=yes`), /pretty: must be true or false/);
  assert.equal(code('GET', `${base}/team-a/serverlessendpoints/queue/tasks/run_1`), 200);
});
