import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CommandError, EXIT } from '../../src/console/errors.ts';
import { explainStatus } from '../../src/console/tenant-route.ts';
import { KubeApiError } from '../../src/kube/client.ts';

// What a keyless caller reads when the way through the apiserver fails: why, and the exit code.
const failure = (status: number, reason: string, detail: string) =>
  new KubeApiError(
    'GET',
    '/apis/tenant.gpucloud.io/v1alpha1/namespaces/a/gpupods/p/log',
    status,
    reason,
    detail,
  );

function explained(error: unknown): CommandError {
  try {
    explainStatus(error);
  } catch (thrown) {
    assert.ok(thrown instanceof CommandError);
    return thrown;
  }
  assert.fail('explainStatus returned');
}

test('no tenant API in the cluster: a key is needed, exit 4, and the value that turns it on', () => {
  const error = explained(failure(404, 'NotFound', 'the server could not find the requested resource'));
  assert.equal(error.exitCode, EXIT.credentials);
  assert.match(
    error.message,
    /needs an API key you hold, or the operator's tenant API, which this cluster does not serve \(tenantApi.enabled/,
  );
});

test('a missing resource is exit 3; a refusal exit 4; a tenant API that does not answer exit 1 of the cloud', () => {
  assert.equal(
    explained(failure(404, 'NotFound', 'gpupods.gpucloud.io "p" not found')).exitCode,
    EXIT.notFound,
  );
  assert.equal(explained(failure(403, 'Forbidden', 'forbidden')).exitCode, EXIT.credentials);
  const down = explained(
    failure(503, 'ServiceUnavailable', 'the server is currently unable to handle the request'),
  );
  assert.equal(down.exitCode, EXIT.cloud);
  assert.match(down.message, /is the operator running/);
  const other = new Error('socket hang up');
  assert.throws(
    () => explainStatus(other),
    (thrown) => thrown === other,
  );
});
