import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  GPU_TYPE_LABEL_PREFIX,
  nodeNameOf,
  placeLabel,
  REGION_LABEL_PREFIX,
} from '../../src/virtual-node/names.ts';

describe('virtual node names', () => {
  test('the node of a ProviderConfig is gpucloud-<name>', () => {
    assert.equal(nodeNameOf('team-a'), 'gpucloud-team-a');
  });

  test('a name too long for a hostname label is cut and hashed: distinct, stable, at most 63 characters', () => {
    const long = `team-${'a'.repeat(80)}`;
    const other = `team-${'a'.repeat(79)}b`;
    assert.ok(nodeNameOf(long).length <= 63);
    assert.notEqual(nodeNameOf(long), nodeNameOf(other));
    assert.equal(nodeNameOf(long), nodeNameOf(long));
    assert.match(nodeNameOf(`x${'.b'.repeat(40)}`), /^gpucloud-[a-z0-9.-]*[a-z0-9]-[0-9a-f]{10}$/);
  });

  test('a GPU type or region becomes a label key, every run of other characters one "-"', () => {
    assert.equal(
      placeLabel(GPU_TYPE_LABEL_PREFIX, 'NVIDIA GeForce RTX 4090'),
      'gpucloud.io/gpu-type.NVIDIA-GeForce-RTX-4090',
    );
    assert.equal(
      placeLabel(GPU_TYPE_LABEL_PREFIX, 'NVIDIA A100 80GB (SXM)'),
      'gpucloud.io/gpu-type.NVIDIA-A100-80GB-SXM',
    );
    assert.equal(placeLabel(REGION_LABEL_PREFIX, 'us-east-1'), 'gpucloud.io/region.us-east-1');
  });

  test('what cannot make a label name has no label', () => {
    assert.equal(placeLabel(GPU_TYPE_LABEL_PREFIX, '()'), undefined);
    assert.equal(placeLabel(GPU_TYPE_LABEL_PREFIX, 'x'.repeat(60)), undefined);
  });
});
