import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { ARGOCD_DIR, argoCdFiles } from '../../tools/argocd-health/artifacts.ts';
import { generateCrdFiles } from '../../tools/crd/files.ts';
import { monitoringFiles } from '../../tools/generate.ts';
import {
  chartFiles,
  REPO_ROOT,
  renderedManifestFiles,
  tenantApiManifestFiles,
} from '../../tools/helm/artifacts.ts';
import { CHART_DIR } from '../../tools/helm/helm.ts';

// Every deployment artefact `npm run gen` writes is committed exactly as it writes it.

const STALE = 'is stale: run `npm run gen` and commit the result';

async function assertCommitted(files: Map<string, string>): Promise<void> {
  for (const [path, content] of files) {
    const committed = await readFile(join(REPO_ROOT, path), 'utf8').catch(() => undefined);
    assert.equal(committed, content, `${path} ${STALE}`);
  }
}

/** Every file under `dir`, as paths from the repository root. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(join(REPO_ROOT, dir), { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(REPO_ROOT.length + 1))
    .sort();
}

test('the chart CRDs, values.yaml, values.schema.json and the docs values table are generated', async () => {
  await assertCommitted(await chartFiles(generateCrdFiles()));
});

test('the chart CRDs are the CRDs of crds/, byte for byte, and nothing else', async () => {
  const chartCrds = join(CHART_DIR, 'crds');
  assert.deepEqual((await readdir(chartCrds)).sort(), (await readdir(join(REPO_ROOT, 'crds'))).sort());
  for (const [name, content] of generateCrdFiles()) {
    assert.equal(await readFile(join(chartCrds, name), 'utf8'), content, `chart crds/${name} ${STALE}`);
  }
});

test('the Grafana dashboard and the alert rules, plain and in the chart, are generated', async () => {
  await assertCommitted(monitoringFiles());
});

test('the plain manifests are the chart rendered with its defaults', async () => {
  await assertCommitted(await renderedManifestFiles(generateCrdFiles()));
});

test('the tenant API file is what tenantApi.enabled=true adds to the plain manifests or changes in them', async () => {
  await assertCommitted(await tenantApiManifestFiles());
});

test('the Argo CD health checks and the argocd-cm patch are generated, with nothing stale beside them', async () => {
  const files = await argoCdFiles();
  await assertCommitted(files);
  assert.deepEqual(await filesUnder(ARGOCD_DIR), [...files.keys()].sort());
});
