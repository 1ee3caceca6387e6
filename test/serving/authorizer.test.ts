import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeRequest } from '../../src/kube/client.ts';
import { forbiddenMessage, SubjectAccessReviewer } from '../../src/serving/authorizer.ts';

// The review sent for each request, and how long a decision is reused: a few seconds at most.
function fakeApiserver(allowed: () => boolean) {
  const reviews: unknown[] = [];
  return {
    reviews,
    kube: {
      request: async (_schema: unknown, request: KubeRequest) => {
        reviews.push(request.body);
        return { status: { allowed: allowed(), reason: 'RBAC' } } as never;
      },
    },
  };
}

const user = { name: 'viewer', groups: ['team-a', 'system:authenticated'], extra: { scopes: ['x'] } };
const attributes = {
  verb: 'get' as const,
  group: 'tenant.gpucloud.io',
  namespace: 'team-a',
  resource: 'gpupods',
  subresource: 'log',
  name: 'trainer',
};

test('asks the apiserver about the user and the exact attributes, group included', async () => {
  const apiserver = fakeApiserver(() => true);
  const reviewer = new SubjectAccessReviewer(apiserver.kube, { allowedTtlMs: 5000, deniedTtlMs: 2000 });
  assert.deepEqual(await reviewer.authorize(user, attributes), { allowed: true, reason: 'RBAC' });
  assert.deepEqual(apiserver.reviews, [
    {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: 'viewer',
        groups: ['team-a', 'system:authenticated'],
        extra: { scopes: ['x'] },
        resourceAttributes: attributes,
      },
    },
  ]);
});

test('a decision is reused only for its few seconds, and never for another user or resource', async () => {
  let now = 0;
  let allow = true;
  const apiserver = fakeApiserver(() => allow);
  const reviewer = new SubjectAccessReviewer(apiserver.kube, {
    allowedTtlMs: 5000,
    deniedTtlMs: 2000,
    now: () => now,
  });
  await reviewer.authorize(user, attributes);
  now = 4999;
  assert.equal((await reviewer.authorize(user, attributes)).allowed, true);
  assert.equal(apiserver.reviews.length, 1);
  await reviewer.authorize({ ...user, name: 'other' }, attributes);
  await reviewer.authorize(user, { ...attributes, name: 'another' });
  assert.equal(apiserver.reviews.length, 3);
  // The grant is revoked: the next request after the decision's time asks again, and is refused.
  allow = false;
  now = 5000;
  assert.equal((await reviewer.authorize(user, attributes)).allowed, false);
  now = 6999;
  assert.equal((await reviewer.authorize(user, attributes)).allowed, false);
  assert.equal(apiserver.reviews.length, 4);
  allow = true;
  now = 7000;
  assert.equal((await reviewer.authorize(user, attributes)).allowed, true);
});

test('a refusal reads as the apiserver words it, in a named group or the core one', () => {
  assert.equal(
    forbiddenMessage(user, attributes),
    'gpupods.tenant.gpucloud.io "trainer" is forbidden: User "viewer" cannot get resource "gpupods/log" in API group "tenant.gpucloud.io" in the namespace "team-a"',
  );
  assert.equal(
    forbiddenMessage(user, {
      ...attributes,
      group: '',
      resource: 'nodes',
      subresource: 'proxy',
      namespace: '',
    }),
    'nodes "trainer" is forbidden: User "viewer" cannot get resource "nodes/proxy" in API group "" in the namespace ""',
  );
});
