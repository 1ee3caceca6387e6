import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { freshSeed } from '../../chaos/random.ts';
import { clientAs } from '../support/impersonation.ts';
import { API_KEY, useStack } from '../support/operator.ts';
import { FUZZ_PROFILES, fuzzEdge } from './edge-fuzz.ts';
import { openFollows, podAndQueues, type TenantWorld, useTenantWorld } from './support.ts';

// The edge fuzz (edge-fuzz.ts): the short profile runs with the tests, in seconds, on loopback;
// `EDGE_FUZZ_PROFILE=long` runs the long one, `EDGE_FUZZ_SEED=<n>` replays a run.
const TEAM = 'team-a';
const OTHER = 'team-b';
const profile = FUZZ_PROFILES[process.env.EDGE_FUZZ_PROFILE === 'long' ? 'long' : 'short'];
const seed = process.env.EDGE_FUZZ_SEED ? Number(process.env.EDGE_FUZZ_SEED) : freshSeed();
const stack = useStack({ transitionMs: 50 });
let world: TenantWorld;

describe('a fuzz of the tenant API edge', () => {
  // A tenant share large enough that the fuzz is not simply told 429 (it is, now and then).
  world = useTenantWorld(stack, {
    flags: ['--tenant-api-rps', '40'],
    bindings: [
      [TEAM, 'view', 'viewer'],
      [TEAM, 'edit', 'editor'],
      [OTHER, 'view', 'neighbour'],
    ],
    objects: podAndQueues(TEAM, OTHER),
    served: (plane) =>
      clientAs(plane, 'neighbour')
        .lines(
          `/apis/tenant.gpucloud.io/v1alpha1/namespaces/${OTHER}/serverlessendpoints/queue/tasks`,
          {},
          AbortSignal.timeout(10_000),
        )
        .next()
        .then(
          () => true,
          () => false,
        ),
  });

  test(`${profile.name} profile: no 5xx of the operator's, no secret or cloud text, every follow released, the neighbour served`, async () => {
    const plane = stack.plane();
    const report = await fuzzEdge(
      {
        plane,
        sim: stack.sim(),
        setup: world.setup(),
        namespace: TEAM,
        other: OTHER,
        client: (user) => clientAs(plane, user),
        openFollows: () => openFollows(world.operator()),
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
