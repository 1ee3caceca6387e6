import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  DEFAULT_NAMESPACE,
  PLAIN_MANIFESTS,
  REPO_ROOT,
  TENANT_API_MANIFESTS,
} from '../../tools/helm/artifacts.ts';
import { documentsOf } from '../../tools/helm/manifest-diff.ts';
import { kubectl, kubectlDiff } from '../support/kubectl.ts';
import { useStack } from '../support/operator.ts';
import { applyPlainManifests } from '../support/plain-manifests.ts';
import { tenantApiUnderItsGrants } from '../tenant-api/installed-grants.ts';
import { renderChart } from './chart-render.ts';

// The tenant API with the plain manifests: the second file applied after the first gives the objects the
// chart gives with tenantApi.enabled=true, and the operator serves the API under their grants as it does
// under the chart's (test/tenant-api/chart-rbac.test.ts runs the same checks). Turned off as the docs
// say, the objects are the chart's defaults again, and no APIService is left to hold namespace deletion.
const stack = useStack();

const keysOf = (text: string) => documentsOf(text).map((document) => document.key);
const read = (file: string) => readFile(join(REPO_ROOT, file), 'utf8');

/** The chart rendered with `values`, CRDs included, in a file for kubectl. */
async function chartFile(name: string, values: Record<string, unknown> = {}): Promise<string> {
  const path = join(stack.plane().dataDir, `${name}.yaml`);
  await writeFile(path, (await renderChart({ values, includeCrds: true })).text);
  return path;
}

describe('the plain manifests with the tenant API file applied after them', () => {
  tenantApiUnderItsGrants(stack, () => applyPlainManifests(stack.plane(), [TENANT_API_MANIFESTS]));

  test('hold the objects the chart renders with tenantApi.enabled=true, and their namespace', async () => {
    const chart = await renderChart({ values: { tenantApi: { enabled: true } }, includeCrds: true });
    const applied = new Set([
      ...keysOf(await read(PLAIN_MANIFESTS)),
      ...keysOf(await read(TENANT_API_MANIFESTS)),
    ]);
    assert.deepEqual([...applied].sort(), [...keysOf(chart.text), `Namespace ${DEFAULT_NAMESPACE}`].sort());
  });

  test("give the chart's objects: applying its rendering over them changes nothing", async () => {
    const on = await chartFile('chart-tenant-api-on', { tenantApi: { enabled: true } });
    assert.equal(await kubectlDiff(stack.plane(), on), '');
    // The comparison sees a difference where there is one.
    assert.match(await kubectlDiff(stack.plane(), await chartFile('chart-default')), /tenant-api-port/);
  });
});

describe('the tenant API file turned off as docs/install.md says', () => {
  test("leaves the chart's default objects, and no APIService", async () => {
    const plane = stack.plane();
    await kubectl(plane, 'delete', '-f', join(REPO_ROOT, TENANT_API_MANIFESTS), '--wait');
    await kubectl(plane, 'apply', '--server-side', '-f', join(REPO_ROOT, PLAIN_MANIFESTS));
    assert.equal(await kubectlDiff(plane, await chartFile('chart-default')), '');
    // Of the second file's objects, only the two the first file holds too are left.
    const left = await kubectl(
      plane,
      'get',
      '-f',
      join(REPO_ROOT, TENANT_API_MANIFESTS),
      '-o',
      'name',
      '--ignore-not-found',
    );
    assert.deepEqual(left.trim().split('\n').sort(), [
      'deployment.apps/gpucloud-operator',
      'networkpolicy.networking.k8s.io/gpucloud-operator',
    ]);
  });
});
