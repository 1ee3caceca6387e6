import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mayLowerOomScoreAdj } from '../../src/local/node/containerd-config.ts';
import { networkFor, overlaps } from '../../src/local/node/network.ts';

// The two decisions the node makes from what it reads on the host: which addresses are free, and whether
// containerd must cap the oom_score_adj it asks runc for.

test('a node instance is refused addresses that overlap any the host already routes or holds', () => {
  const { hostAddress, podSubnet } = networkFor(3);
  assert.equal(hostAddress, '10.244.3.1');
  assert.equal(podSubnet, '10.88.3.0/24');
  assert.equal(overlaps(podSubnet, '10.88.0.0/16'), true);
  assert.equal(overlaps(podSubnet, '10.88.3.77/32'), true);
  assert.equal(overlaps(`${hostAddress}/30`, '10.244.3.2'), true);
  assert.equal(overlaps(podSubnet, '10.88.4.0/24'), false);
  assert.equal(overlaps(`${hostAddress}/30`, '10.244.3.4/30'), false);
  assert.equal(overlaps(podSubnet, '192.0.2.0/24'), false);
});

test('containerd caps oom_score_adj exactly when CAP_SYS_RESOURCE (bit 24) is not effective', () => {
  const status = (capEff: string) => `Name:\tnode\nCapInh:\t0000000000000000\nCapEff:\t${capEff}\n`;
  // This machine's root: every capability but CAP_SYS_RESOURCE.
  assert.equal(mayLowerOomScoreAdj(status('000001fffeffffff')), false);
  assert.equal(mayLowerOomScoreAdj(status('000001ffffffffff')), true);
  assert.equal(mayLowerOomScoreAdj(status('0000000001000000')), true);
  assert.equal(mayLowerOomScoreAdj('Name:\tnode\n'), false);
});
