import { readdir, readFile } from 'node:fs/promises';
import {
  ApiextensionsV1Api,
  type KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';

const CRD_DIR = new URL('../../crds/', import.meta.url);
const FIELD_MANAGER = 'gpucloud-tests';

/**
 * Applies the committed CRDs (crds/*.yaml) with server-side apply and waits until the apiserver
 * serves every one of them. Idempotent: suites sharing a control plane may each call it.
 */
export async function installCrds(kubeConfig: KubeConfig, timeoutMs = 30_000): Promise<void> {
  const crds = await readCrds();
  const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
  for (const crd of crds) {
    await objects.patch(crd, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  }
  const extensions = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    while (!(await isEstablished(extensions, name))) {
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function readCrds(): Promise<V1CustomResourceDefinition[]> {
  const files = (await readdir(CRD_DIR)).filter((file) => file.endsWith('.yaml')).sort();
  const texts = await Promise.all(files.map((file) => readFile(new URL(file, CRD_DIR), 'utf8')));
  // loadAllYaml returns client-node models, which the object API serialises back to the wire form.
  return texts.flatMap((text) => loadAllYaml(text) as V1CustomResourceDefinition[]);
}

async function isEstablished(api: ApiextensionsV1Api, name: string): Promise<boolean> {
  const crd = await api.readCustomResourceDefinition({ name });
  return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
}
