import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import type { KubeRequest } from '../../src/kube/client.ts';
import {
  REFUSED_TTL_MS,
  TOKEN_TTL_MS,
  TokenReviewer,
} from '../../src/virtual-node/kubelet-api/bearer-token.ts';

// The kubelet API's bearer tokens: one TokenReview per token per period, the valid and the refused alike.
function fakeApiserver(valid: ReadonlySet<string>) {
  const reviewed: string[] = [];
  return {
    reviewed,
    kube: {
      request: async (_schema: unknown, request: KubeRequest) => {
        const token = (request.body as { spec: { token: string } }).spec.token;
        reviewed.push(token);
        return (
          valid.has(token)
            ? {
                status: {
                  authenticated: true,
                  user: { username: 'system:serviceaccount:kube-system:metrics-server' },
                },
              }
            : { status: { authenticated: false } }
        ) as never;
      },
    },
  };
}

const withHeader = (authorization?: string) =>
  ({ headers: authorization === undefined ? {} : { authorization } }) as IncomingMessage;

test('a valid token is reviewed once per period; its user named', async () => {
  let now = 0;
  const apiserver = fakeApiserver(new Set(['good']));
  const tokens = new TokenReviewer(apiserver.kube, () => now);
  const user = { name: 'system:serviceaccount:kube-system:metrics-server', groups: [], extra: {} };
  assert.deepEqual(await tokens.authenticate(withHeader('Bearer good')), { user });
  now = TOKEN_TTL_MS - 1;
  assert.deepEqual(await tokens.authenticate(withHeader('Bearer good')), { user });
  assert.equal(apiserver.reviewed.length, 1);
  now = TOKEN_TTL_MS;
  await tokens.authenticate(withHeader('Bearer good'));
  assert.equal(apiserver.reviewed.length, 2, 'asked again once its time is up');
});

test('a refused token is kept refused a short while: repeating it costs one review per period', async () => {
  let now = 0;
  const apiserver = fakeApiserver(new Set());
  const tokens = new TokenReviewer(apiserver.kube, () => now);
  for (let i = 0; i < 50; i++) {
    assert.deepEqual(await tokens.authenticate(withHeader('Bearer forged')), {
      refused: 'the bearer token is not valid',
    });
  }
  assert.equal(apiserver.reviewed.length, 1);
  now = REFUSED_TTL_MS;
  await tokens.authenticate(withHeader('Bearer forged'));
  assert.equal(apiserver.reviewed.length, 2);
});

test('no token is no answer; a header that is not a bearer token is refused without a review', async () => {
  const apiserver = fakeApiserver(new Set());
  const tokens = new TokenReviewer(apiserver.kube);
  assert.equal(await tokens.authenticate(withHeader()), undefined);
  assert.deepEqual(await tokens.authenticate(withHeader('Basic dXNlcjpwYXNz')), {
    refused: 'the Authorization header is not a bearer token',
  });
  assert.deepEqual(apiserver.reviewed, []);
});
