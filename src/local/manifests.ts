import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { z } from 'zod';
import type { KubeClient } from '../kube/client.ts';

const manifestSchema = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
});
export type Manifest = z.output<typeof manifestSchema>;

// A CRD just created may answer `conditions: null` before the apiserver has looked at it.
const crdSchema = z.looseObject({
  status: z
    .looseObject({ conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).nullish() })
    .nullish(),
});

const FIELD_MANAGER = 'gpucloud-local';

/** Every object of every `.yaml` file in `dir`, in file-name order. */
export async function readManifests(dir: string): Promise<Manifest[]> {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.yaml')).sort();
  const texts = await Promise.all(files.map((file) => readFile(join(dir, file), 'utf8')));
  return texts.flatMap((text) => z.array(manifestSchema).parse(loadAll(text).filter((doc) => doc !== null)));
}

/** Server-side applies `manifest` (JSON is YAML) in `namespace` when the kind is namespaced. */
export async function apply(client: KubeClient, path: string, manifest: Manifest): Promise<void> {
  await client.request(z.unknown(), {
    method: 'PATCH',
    path: `${path}/${encodeURIComponent(manifest.metadata.name)}`,
    query: { fieldManager: FIELD_MANAGER, force: true },
    patchType: 'application/apply-patch+yaml',
    body: manifest,
  });
}

/** Applies the CRDs of `dir` and waits until the apiserver serves each of them. */
export async function installCrds(client: KubeClient, dir: string, timeoutMs = 30_000): Promise<void> {
  const crds = await readManifests(dir);
  const path = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
  for (const crd of crds) await apply(client, path, crd);
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    while (!(await established(client, `${path}/${crd.metadata.name}`))) {
      if (Date.now() > deadline)
        throw new Error(`CRD ${crd.metadata.name} not Established within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function established(client: KubeClient, path: string): Promise<boolean> {
  const crd = await client.request(crdSchema, { method: 'GET', path });
  return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
}
