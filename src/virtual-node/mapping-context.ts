// What the Pod mapping (pod-mapping.ts, pod-env.ts) works from and makes: the facts the controller gathers
// for it, and the GpuPod spec it writes.
import type { z } from 'zod';
import type { GpuPodSpecSchema } from '../resources/gpu-pod/schema.ts';
import type { SecretFacts } from './pull-secrets.ts';

/** What the controller writes as the GpuPod's spec (the apiserver fills the defaults). */
export type MappedSpec = z.input<typeof GpuPodSpecSchema>;

export interface MappingContext {
  /** The node's ProviderConfig: the account the cloud pod is made in. */
  readonly config: string;
  readonly node: { readonly name: string; readonly address: string };
  /** The GPU types the node can place now (its offers the guardrails allow). */
  readonly gpuTypes: readonly string[];
  /**
   * The ConfigMaps of the Pod's namespace it names (`configMapsNamed`), undefined for one not found; when
   * not read at all, their variables are left out (a comparison of the other fields needs no read).
   */
  readonly configMaps?: ReadonlyMap<string, Readonly<Record<string, string>> | undefined>;
  /** The Secrets it names (`secretsNamed`), as facts with no value; undefined as `configMaps`. */
  readonly secrets?: ReadonlyMap<string, SecretFacts | undefined>;
}
