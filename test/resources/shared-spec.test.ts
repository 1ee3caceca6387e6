import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cloudFieldsOf, MANAGED_SPEC_FIELDS } from '../../src/resources/common/schema.ts';
import { GpuPodSpecSchema } from '../../src/resources/gpu-pod/schema.ts';
import { GpuVmSpecSchema } from '../../src/resources/gpu-vm/schema.ts';
import { ServerlessEndpointSpecSchema } from '../../src/resources/serverless-endpoint/schema.ts';

// The operator's own spec fields are one shape: every kind of cloud object has each of them, and
// none of them reaches a cloud request.
test('every kind of cloud object has every shared spec field', () => {
  for (const [kind, schema] of [
    ['GpuPod', GpuPodSpecSchema],
    ['GpuVm', GpuVmSpecSchema],
    ['ServerlessEndpoint', ServerlessEndpointSpecSchema],
  ] as const) {
    const fields = Object.keys(schema.shape);
    for (const field of MANAGED_SPEC_FIELDS) assert.ok(fields.includes(field), `${kind} has ${field}`);
  }
});

test('cloudFieldsOf strips every shared field and keeps the rest as they are', () => {
  const spec = {
    image: 'ubuntu:24.04',
    gpuCount: 2,
    ...Object.fromEntries(MANAGED_SPEC_FIELDS.map((field) => [field, { set: field }])),
  };
  assert.deepEqual(cloudFieldsOf(spec), { image: 'ubuntu:24.04', gpuCount: 2 });
});
