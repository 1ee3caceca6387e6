import assert from 'node:assert/strict';
import { request } from 'node:https';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { LOCAL_TENANT_SERVICE } from '../../src/local/tenant-api.ts';
import { TENANT_GROUP_VERSION } from '../../src/tenant-api/group.ts';
import { type RunningOperator, startOperator, useStack } from '../support/operator.ts';
import { poll } from '../support/until.ts';
import { type TenantApiSetup, tenantApiSetup } from './support.ts';

// Which replicas serve: the leader only, so that the account's request budget (its client's limiter and
// the tenant share, both in the leader's memory) holds whatever the number of replicas. The leader names
// itself the Service's one endpoint; a follower reached anyway (a stale endpoint during a failover)
// answers 503 without a cloud call; when the leader stops, the follower takes over both.
const stack = useStack();
const ADDRESSES = ['10.244.0.11', '10.244.0.12'] as const;
const SLICE = `/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/${LOCAL_TENANT_SERVICE.name}-leader`;
const replicas: Array<{ setup: TenantApiSetup; operator: RunningOperator | undefined }> = [];

function ask(setup: TenantApiSetup): Promise<number> {
  const proxy = stack.plane().frontProxy;
  return new Promise((resolve, reject) => {
    request(
      {
        host: '127.0.0.1',
        port: setup.port,
        path: `/apis/${TENANT_GROUP_VERSION}/namespaces/default/gpupods/nothing/metrics`,
        servername: `${LOCAL_TENANT_SERVICE.name}.${LOCAL_TENANT_SERVICE.namespace}.svc`,
        ca: setup.caPem,
        cert: proxy.certPem,
        key: proxy.keyPem,
        headers: { 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    )
      .on('error', reject)
      .end();
  });
}

const sliceSchema = z.looseObject({
  endpoints: z.array(z.object({ addresses: z.array(z.string()) })).nullish(),
});
const leaderAddress = async () =>
  (
    await stack
      .cluster()
      .client.request(sliceSchema, { method: 'GET', path: SLICE })
      .catch(() => undefined)
  )?.endpoints?.[0]?.addresses[0];

describe('two replicas of the tenant API', () => {
  before(async () => {
    for (const address of ADDRESSES) {
      const setup = await tenantApiSetup(
        stack.plane(),
        [
          ...['--tenant-api-advertise-address', address, '--tenant-api-service', LOCAL_TENANT_SERVICE.name],
          ...[
            '--leader-elect',
            'true',
            '--lease-namespace',
            'default',
            '--lease-name',
            'tenant-api-replicas',
          ],
          ...['--lease-duration', '4', '--renew-deadline', '3', '--retry-period', '1'],
        ],
        `tenant-api-${address}`,
      );
      replicas.push({
        setup,
        operator: await startOperator(stack.plane(), stack.sim(), { flags: setup.flags }),
      });
    }
  });
  after(async () => {
    for (const replica of replicas) await replica.operator?.stop();
  });

  test('only the leader serves and is the endpoint; the follower takes over when it stops', async () => {
    const first = await poll(
      leaderAddress,
      (address) => address !== undefined,
      'a leader in the EndpointSlice',
    );
    const leader = replicas[ADDRESSES.indexOf(first as (typeof ADDRESSES)[number])];
    const follower = replicas.find((replica) => replica !== leader);
    assert.ok(leader && follower);
    assert.equal(await ask(leader.setup), 404, 'the leader reviews and looks the resource up');
    assert.equal(await ask(follower.setup), 503, 'the follower serves nothing');

    await leader.operator?.stop();
    leader.operator = undefined;
    const next = await poll(
      leaderAddress,
      (address) => address !== undefined && address !== first,
      'the new leader',
      30_000,
    );
    assert.equal(next, ADDRESSES[replicas.indexOf(follower)]);
    await poll(
      () => ask(follower.setup),
      (code) => code === 404,
      'the new leader serving',
    );
  });
});
