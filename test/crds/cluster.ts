import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ApiException, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { GROUP, kinds, VERSION } from '../../src/resources/kinds.ts';
import type { Manifest } from './examples.ts';

// What the apiserver suites of the CRDs share: typed access to custom objects, kubectl, and the
// message of a rejected request.

const execFileAsync = promisify(execFile);

export interface Cluster {
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
}

function kindOf(kind: string) {
  const found = kinds.find((candidate) => candidate.kind === kind);
  if (found === undefined) throw new Error(`not a gpucloud kind: ${kind}`);
  return found;
}

export class CustomResources {
  readonly #api: CustomObjectsApi;
  readonly #namespace: string;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#namespace = namespace;
  }

  /** Creates (or, with dryRun, only admits) a custom resource; unknown fields are errors. */
  async create(manifest: Manifest, options: { dryRun?: boolean } = {}): Promise<Manifest> {
    const request = {
      ...this.#target(manifest.kind),
      body: manifest,
      fieldValidation: 'Strict',
      ...(options.dryRun ? { dryRun: 'All' } : {}),
    };
    return kindOf(manifest.kind).scope === 'Cluster'
      ? this.#api.createClusterCustomObject(request)
      : this.#api.createNamespacedCustomObject(request);
  }

  async get(kind: string, name: string): Promise<Manifest> {
    return this.#api.getNamespacedCustomObject({ ...this.#target(kind), name });
  }

  /** Reads the object, lets `change` edit it, and writes it back (a PUT, as kubectl edit does). */
  async update(kind: string, name: string, change: (object: Manifest) => void): Promise<Manifest> {
    const object = await this.get(kind, name);
    change(object);
    return this.#api.replaceNamespacedCustomObject({
      ...this.#target(kind),
      name,
      body: object,
      fieldValidation: 'Strict',
    });
  }

  async replaceStatus(kind: string, name: string, status: Record<string, unknown>): Promise<Manifest> {
    const object = await this.get(kind, name);
    return this.#api.replaceNamespacedCustomObjectStatus({
      ...this.#target(kind),
      name,
      body: { ...object, status },
    });
  }

  #target(kind: string) {
    return { group: GROUP, version: VERSION, namespace: this.#namespace, plural: kindOf(kind).plural };
  }
}

export async function createNamespace(kubeConfig: KubeConfig, name: string): Promise<void> {
  await kubeConfig.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
}

/** The message of the Status the apiserver answered a rejected request with. */
export async function rejection(request: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await request;
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body: unknown = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
    const message =
      typeof body === 'object' && body !== null && 'message' in body ? String(body.message) : '';
    return { code: error.code, message };
  }
  throw new Error('the apiserver accepted the request');
}

export async function kubectl(cluster: Cluster, ...args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('/usr/bin/kubectl', [
    '--kubeconfig',
    cluster.kubeconfigPath,
    ...args,
  ]);
  return stdout;
}
