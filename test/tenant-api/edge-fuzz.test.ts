import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { freshSeed } from '../../chaos/random.ts';
import { type RunningControllerManager, startControllerManager } from '../../src/local/controller-manager.ts';
import { clientAs } from '../support/impersonation.ts';
import {
  API_KEY,
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';
import { poll } from '../support/until.ts';
import { FUZZ_PROFILES, fuzzEdge } from './edge-fuzz.ts';
import { bindRole, openFollows, type TenantApiSetup, tenantApiSetup } from './support.ts';

// The edge fuzz (edge-fuzz.ts): the short profile runs with the tests, in seconds, on loopback;
// `EDGE_FUZZ_PROFILE=long` runs the long one, `EDGE_FUZZ_SEED=<n>` replays a run.
const TEAM = 'team-a';
const OTHER = 'team-b';
const profile = FUZZ_PROFILES[process.env.EDGE_FUZZ_PROFILE === 'long' ? 'long' : 'short'];
const seed = process.env.EDGE_FUZZ_SEED ? Number(process.env.EDGE_FUZZ_SEED) : freshSeed();
const stack = useStack({ transitionMs: 50 });
let operator: RunningOperator;
let controllers: RunningControllerManager;
let setup: TenantApiSetup;

describe('a fuzz of the tenant API edge', () => {
  before(async () => {
    const plane = stack.plane();
    const cluster = stack.cluster();
    controllers = await startControllerManager(plane, {
      controllers: ['clusterrole-aggregation-controller'],
    });
    for (const namespace of [TEAM, OTHER]) await cluster.ensureNamespace(namespace);
    // A tenant share large enough that the fuzz is not simply told 429 (it is, now and then).
    setup = await tenantApiSetup(plane, ['--tenant-api-rps', '40']);
    operator = await startOperator(plane, stack.sim(), { flags: setup.flags });
    await setup.register(cluster.client);
    await bindRole(cluster.client, TEAM, 'view', 'viewer');
    await bindRole(cluster.client, TEAM, 'edit', 'editor');
    await bindRole(cluster.client, OTHER, 'view', 'neighbour');
    await cluster.create(resources.gpuPod, TEAM, manifests.gpuPod('trainer'));
    for (const namespace of [TEAM, OTHER])
      await cluster.create(resources.serverlessEndpoint, namespace, manifests.serverlessEndpoint('queue'));
    await Promise.all([
      cluster.waitFor(resources.gpuPod, TEAM, 'trainer', isReady(), 'Ready'),
      cluster.waitFor(resources.serverlessEndpoint, TEAM, 'queue', isReady(), 'Ready'),
      cluster.waitFor(resources.serverlessEndpoint, OTHER, 'queue', isReady(), 'Ready'),
    ]);
    await poll(
      async () => {
        const lines = clientAs(plane, 'neighbour').lines(
          `/apis/tenant.gpucloud.io/v1alpha1/namespaces/${OTHER}/serverlessendpoints/queue/tasks`,
          {},
          AbortSignal.timeout(10_000),
        );
        return lines.next().then(
          () => true,
          () => false,
        );
      },
      (served) => served,
      'view to include serverlessendpoints/tasks',
      30_000,
    );
  });
  after(async () => {
    await operator?.stop();
    await controllers?.stop();
  });

  test(`${profile.name} profile: no 5xx of the operator's, no secret or cloud text, every follow released, the neighbour served`, async () => {
    const plane = stack.plane();
    const report = await fuzzEdge(
      {
        plane,
        sim: stack.sim(),
        setup,
        namespace: TEAM,
        other: OTHER,
        client: (user) => clientAs(plane, user),
        openFollows: () => openFollows(operator),
        forbidden: [API_KEY, /injected fault|SystemError|the service answered|query\.[a-z]|lines per page/],
      },
      profile,
      seed,
    );
    console.log(JSON.stringify({ ...report, violations: report.violations.length }));
    assert.deepEqual(report.violations, [], `seed ${seed}`);
    assert.equal(report.requests, profile.requests);
    assert.ok(report.neighbourRequests > 0);
  });
});
