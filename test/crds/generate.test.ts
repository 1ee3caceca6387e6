import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { load } from 'js-yaml';
import { kinds } from '../../src/resources/kinds.ts';
import type { CustomResourceDefinition } from '../../tools/crd/crd.ts';
import { CRD_DIR, generateCrdFiles } from '../../tools/crd/files.ts';
import type { StructuralSchema } from '../../tools/crd/structural-schema.ts';

async function committedCrds(): Promise<Map<string, string>> {
  const files = (await readdir(CRD_DIR)).filter((file) => file.endsWith('.yaml')).sort();
  return new Map(
    await Promise.all(
      files.map(async (file) => [file, await readFile(join(CRD_DIR, file), 'utf8')] as const),
    ),
  );
}

test('the committed crds/ are exactly what the generator writes (run `npm run gen` after a schema change)', async () => {
  const committed = await committedCrds();
  const fresh = generateCrdFiles();
  assert.deepEqual([...committed.keys()], [...fresh.keys()].sort());
  for (const [file, content] of fresh) assert.equal(committed.get(file), content, `crds/${file} is stale`);
});

test('generation is deterministic', () => {
  assert.deepEqual(generateCrdFiles(), generateCrdFiles());
});

/** Paths of the properties under `schema` that have no description. */
function undescribed(schema: StructuralSchema, path: string): string[] {
  const own = Object.entries(schema.properties ?? {}).flatMap(([name, child]) => [
    ...(child.description === undefined ? [`${path}.${name}`] : []),
    ...undescribed(child, `${path}.${name}`),
  ]);
  const item = schema.items === undefined ? [] : undescribed(schema.items, `${path}[]`);
  return [...own, ...item];
}

test('every field of every CRD has a description, so kubectl explain documents the whole API', async () => {
  for (const [file, text] of await committedCrds()) {
    const crd = load(text) as CustomResourceDefinition;
    const root = crd.spec.versions[0]?.schema.openAPIV3Schema;
    assert.ok(root?.description, `${file}: the kind has no description`);
    // metadata is the standard ObjectMeta, which the apiserver documents itself.
    const missing = undescribed(root, 'root').filter((path) => path !== 'root.metadata');
    assert.deepEqual(missing, [], `${file}: fields without a description`);
  }
});

test('each CRD names its kind and scope, is in the gpucloud category, and syncs before CRs in Argo CD', () => {
  const files = generateCrdFiles();
  for (const kind of kinds) {
    const crd = load(files.get(`${kind.plural}.gpucloud.io.yaml`) ?? '') as CustomResourceDefinition;
    assert.equal(crd.metadata.name, `${kind.plural}.gpucloud.io`);
    assert.equal(crd.metadata.annotations['argocd.argoproj.io/sync-wave'], '-1');
    assert.equal(crd.spec.scope, kind.kind === 'ProviderConfig' ? 'Cluster' : 'Namespaced');
    assert.deepEqual(crd.spec.names.categories, ['gpucloud']);
    assert.deepEqual(crd.spec.names.shortNames, [...kind.shortNames]);
    const [version] = crd.spec.versions;
    assert.equal(version?.name, 'v1alpha1');
    assert.deepEqual(version?.subresources.status, {});
    const columns = version?.additionalPrinterColumns.map((column) => column.name);
    // A ProviderConfig stands for no cloud object: it has no phase.
    const common = kind.kind === 'ProviderConfig' ? ['Ready', 'Age'] : ['Phase', 'Ready', 'Age'];
    assert.deepEqual(
      columns?.filter((name) => ['Phase', 'Ready', 'Age'].includes(name)),
      common,
    );
  }
});

test('only ServerlessEndpoint has a scale subresource, from spec.workers to status.replicas', () => {
  const crds = [...generateCrdFiles().values()].map((text) => load(text) as CustomResourceDefinition);
  const scales = crds.map((crd) => [crd.spec.names.kind, crd.spec.versions[0]?.subresources.scale]);
  assert.deepEqual(scales, [
    ['GpuPod', undefined],
    ['GpuVm', undefined],
    [
      'ServerlessEndpoint',
      {
        specReplicasPath: '.spec.workers',
        statusReplicasPath: '.status.replicas',
        labelSelectorPath: '.status.selector',
      },
    ],
    ['ServerlessTask', undefined],
    ['ProviderConfig', undefined],
  ]);
});
