import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubernetesObject, V1Container, V1Deployment } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { CHART_DIR, helm } from '../../tools/helm/helm.ts';

// `helm template` of the chart, parsed, with lookups for the assertions of the chart tests.

export const ALL_ON_VALUES = join(CHART_DIR, 'ci', 'all-on-values.yaml');
export const RELEASE = 'gpucloud-operator';
export const NAMESPACE = 'gpucloud-system';

export type Manifest = KubernetesObject & { [field: string]: unknown };

export interface RenderOptions {
  /** A values file, as for `helm template -f`. */
  valuesFile?: string;
  /** Values on top, as for `--set`/`-f` (written to a temporary file). */
  values?: Record<string, unknown>;
  release?: string;
  /** The chart's CRDs too, as `helm install` applies them (`--include-crds`). */
  includeCrds?: boolean;
}

export class Rendered {
  readonly manifests: readonly Manifest[];
  /** The raw output, for assertions on what must never appear in it. */
  readonly text: string;

  constructor(text: string) {
    this.text = text;
    this.manifests = (loadAll(text) as Array<Manifest | null>).filter((m): m is Manifest => m !== null);
  }

  all(kind: string): Manifest[] {
    return this.manifests.filter((manifest) => manifest.kind === kind);
  }

  one<T extends Manifest = Manifest>(kind: string, name?: string): T {
    const found = this.all(kind).filter((manifest) => name === undefined || manifest.metadata?.name === name);
    if (found.length !== 1) {
      throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, rendered ${found.length}`);
    }
    return found[0] as T;
  }

  deployment(): V1Deployment {
    return this.one<V1Deployment & Manifest>('Deployment');
  }

  container(): V1Container {
    const container = this.deployment().spec?.template.spec?.containers[0];
    if (!container) throw new Error('the Deployment has no container');
    return container;
  }
}

export async function renderChart(options: RenderOptions = {}): Promise<Rendered> {
  const dir = await mkdtemp(join(tmpdir(), 'gpucloud-chart-'));
  try {
    const args = ['template', options.release ?? RELEASE, CHART_DIR, '--namespace', NAMESPACE];
    if (options.includeCrds) args.push('--include-crds');
    if (options.valuesFile) args.push('--values', options.valuesFile);
    if (options.values) {
      const file = join(dir, 'values.json');
      await writeFile(file, JSON.stringify(options.values));
      args.push('--values', file);
    }
    return new Rendered(await helm(args));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
