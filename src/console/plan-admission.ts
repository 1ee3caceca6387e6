import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { admitCreate } from '../kube/admission/admit.ts';
import { type CustomKind, type CustomKinds, loadCustomKinds } from '../kube/admission/crd.ts';
import { isObject, type JsonObject } from '../kube/admission/decode.ts';
import { KubeApiError, type KubeClient } from '../kube/client.ts';
import type { ManifestObject } from './manifests.ts';

// What admission would make of each manifest of our kinds, before `plan` prices anything. With a cluster
// it may use, the cluster says: a dry run (dryRun=All, fieldValidation=Strict) of the create, or, for an
// object that exists, of a server-side apply (the update `kubectl apply` makes, transition rules and
// all), which also runs the cluster's own admission policies and webhooks, and stores nothing. Without
// one (no kubeconfig, unreachable, the namespace not there yet, or RBAC that does not let the user
// create the kind there), the committed CRDs judge it offline, as a create: their OpenAPI schema and
// their CEL rules (src/kube/admission).

/** The CRDs this version of the CLI was built with: crds/ beside src/ (or dist/) in the package. */
export const CRD_DIR = fileURLToPath(new URL('../../crds/', import.meta.url));

export interface AdmissionVerdict {
  readonly source: string;
  /** `GpuPod ml/trainer`, `ProviderConfig research`. */
  readonly resource: string;
  /** Who judged: the cluster (a dry run), or the CRDs offline. */
  readonly by: 'cluster' | 'crds';
  /** Why the CRDs judged rather than the cluster. */
  readonly offline?: string | undefined;
  /** Admission's refusal, in its words; absent when admitted. */
  readonly refused?: string | undefined;
}

/** The cluster as admission may use it: a client, or why there is none. */
export type AdmissionCluster = { readonly kube: KubeClient } | { readonly problem: string };

const accessReviewSchema = z.object({ status: z.object({ allowed: z.boolean() }).optional() });
const FIELD_MANAGER = 'gpucloud-plan';

export async function judgeAdmission(
  manifests: readonly ManifestObject[],
  cluster: AdmissionCluster,
  defaultNamespace: string,
  kinds?: CustomKinds,
): Promise<AdmissionVerdict[]> {
  const crds = kinds ?? (await loadCustomKinds(CRD_DIR));
  const judge = new Judge(crds, cluster);
  const verdicts: AdmissionVerdict[] = [];
  for (const { source, object } of manifests) {
    if (!isObject(object) || typeof object.apiVersion !== 'string') continue;
    const group = object.apiVersion.split('/')[0] ?? '';
    if (!crds.groups.has(group)) continue;
    verdicts.push({ source, ...(await judge.verdict(object, defaultNamespace)) });
  }
  return verdicts;
}

type Judged = Omit<AdmissionVerdict, 'source'>;

class Judge {
  readonly #kinds: CustomKinds;
  #cluster: AdmissionCluster;
  readonly #reviews = new Map<string, Promise<boolean>>();

  constructor(kinds: CustomKinds, cluster: AdmissionCluster) {
    this.#kinds = kinds;
    this.#cluster = cluster;
  }

  async verdict(object: JsonObject, defaultNamespace: string): Promise<Judged> {
    const kind = this.#kinds.find(String(object.apiVersion), String(object.kind));
    const metadata = isObject(object.metadata) ? object.metadata : {};
    const namespace = kind?.namespaced ? String(metadata.namespace ?? defaultNamespace) : '';
    const name = String(metadata.name ?? `${metadata.generateName ?? ''}*`);
    const resource = `${String(object.kind)} ${namespace === '' ? name : `${namespace}/${name}`}`;
    const offline = (why: string): Judged => {
      const admission = admitCreate(object, this.#kinds, defaultNamespace);
      return {
        resource,
        by: 'crds',
        offline: why,
        refused: admission.admitted ? undefined : admission.message,
      };
    };
    if (kind === undefined) return offline('no such kind in the CRDs of this gpucloud');
    if ('problem' in this.#cluster) return offline(this.#cluster.problem);
    const { kube } = this.#cluster;
    const body = {
      ...object,
      metadata: kind.namespaced ? { ...metadata, namespace } : withoutNamespace(metadata),
    };
    try {
      if (!(await this.#allowed(kube, 'create', kind, namespace))) {
        return offline(`you may not create ${kind.plural}${namespace ? ` in namespace ${namespace}` : ''}`);
      }
      const created = await this.#dryRun(() =>
        kube.request(z.unknown(), {
          method: 'POST',
          path: collection(kind, namespace),
          query: { dryRun: 'All', fieldValidation: 'Strict' },
          body,
        }),
      );
      if (created !== 'exists') return { resource, by: 'cluster', refused: created };
      if (!(await this.#allowed(kube, 'patch', kind, namespace))) {
        return offline(
          `it exists, and you may not patch ${kind.plural}${namespace ? ` in namespace ${namespace}` : ''}`,
        );
      }
      const applied = await this.#dryRun(() =>
        kube.request(z.unknown(), {
          method: 'PATCH',
          path: `${collection(kind, namespace)}/${encodeURIComponent(name)}`,
          query: { dryRun: 'All', fieldValidation: 'Strict', fieldManager: FIELD_MANAGER, force: true },
          patchType: 'application/apply-patch+yaml',
          body,
        }),
      );
      return applied === 'exists'
        ? offline('the object changed while the cluster judged it')
        : { resource, by: 'cluster', refused: applied };
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) {
        return offline(
          namespace
            ? `namespace ${namespace} is not in the cluster yet`
            : `the cluster does not serve ${kind.plural}`,
        );
      }
      const why =
        error instanceof KubeApiError ? `HTTP ${error.status} ${error.reason}` : (error as Error).message;
      // An unreachable cluster is not asked again.
      if (!(error instanceof KubeApiError))
        this.#cluster = { problem: `the cluster is unreachable (${why})` };
      return offline(`the cluster could not judge it (${why.split('\n')[0]})`);
    }
  }

  /** The refusal of a dry run, undefined when admitted, `exists` for 409; other failures throw. */
  async #dryRun(send: () => Promise<unknown>): Promise<string | undefined | 'exists'> {
    try {
      await send();
      return undefined;
    } catch (error) {
      if (!(error instanceof KubeApiError)) throw error;
      if (error.status === 409) return 'exists';
      // 400 strict decoding, 422 Invalid (schema, rules, admission policies), 403 from an admission webhook
      // or a quota (RBAC was asked first): admission refuses. Anything else is not a verdict.
      if ([400, 403, 422].includes(error.status)) return error.detail;
      throw error;
    }
  }

  /** Whether the user may `verb` the kind in the namespace (a SelfSubjectAccessReview, asked once). */
  #allowed(kube: KubeClient, verb: string, kind: CustomKind, namespace: string): Promise<boolean> {
    const key = `${verb} ${kind.apiVersion} ${kind.plural} ${namespace}`;
    let review = this.#reviews.get(key);
    if (review === undefined) {
      review = kube
        .request(accessReviewSchema, {
          method: 'POST',
          path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SelfSubjectAccessReview',
            spec: {
              resourceAttributes: {
                verb,
                group: kind.apiVersion.split('/')[0],
                resource: kind.plural,
                ...(namespace ? { namespace } : {}),
              },
            },
          },
        })
        .then((answer) => answer.status?.allowed === true);
      this.#reviews.set(key, review);
    }
    return review;
  }
}

function collection(kind: CustomKind, namespace: string): string {
  return namespace
    ? `/apis/${kind.apiVersion}/namespaces/${encodeURIComponent(namespace)}/${kind.plural}`
    : `/apis/${kind.apiVersion}/${kind.plural}`;
}

function withoutNamespace(metadata: JsonObject): JsonObject {
  const { namespace: _, ...rest } = metadata;
  return rest;
}
