// The Helm chart installed into a test control plane, with a kubeconfig as the chart's ServiceAccount.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ControlPlane } from '../../src/local/controlplane.ts';
import { CHART_DIR, helm } from '../../tools/helm/helm.ts';
import { type Installation, serviceAccountKubeconfig, serviceAccountOf } from './installation.ts';

export interface ChartInstallOptions {
  /** Default `gpucloud-operator`, which is also the fullname of every object. */
  release?: string;
  /** Created when missing. Default `gpucloud-system`. */
  namespace?: string;
  /** Values on top of the chart defaults, as for `helm install -f`. */
  values?: Record<string, unknown>;
}

export interface InstalledChart extends Installation {
  /** What `helm install` told the user to do next (the chart's NOTES.txt). */
  notes: string;
  /** `helm upgrade` of the release with `values` on top of those it has (`--reuse-values`); its output. */
  upgrade(values: Record<string, unknown>): Promise<string>;
  /** `helm uninstall`, once however often called; the CRDs stay, as they do for users. */
  uninstall(): Promise<void>;
}

export async function installChart(
  plane: ControlPlane,
  options: ChartInstallOptions = {},
): Promise<InstalledChart> {
  const release = options.release ?? 'gpucloud-operator';
  const namespace = options.namespace ?? 'gpucloud-system';
  const values = options.values ?? {};
  const scratch = await mkdtemp(join(tmpdir(), 'gpucloud-chart-install-'));
  const helmEnv = helmHomes(scratch);
  const target = ['--namespace', namespace, '--kubeconfig', plane.kubeconfigPath];
  let uninstalled: Promise<void> | undefined;
  try {
    const valuesFile = join(scratch, 'values.json');
    await writeFile(valuesFile, JSON.stringify(values));
    const installed = await helm(
      ['install', release, CHART_DIR, ...target, '--create-namespace', '--values', valuesFile],
      helmEnv,
    );
    const serviceAccount = serviceAccountOf(await helm(['get', 'manifest', release, ...target], helmEnv));
    return {
      release,
      namespace,
      serviceAccount,
      notes: installed.slice(installed.indexOf('NOTES:\n') + 'NOTES:\n'.length),
      kubeconfigPath: await serviceAccountKubeconfig(plane, namespace, serviceAccount),
      upgrade: async (changes) => {
        const changesFile = join(scratch, `upgrade-${Date.now()}.json`);
        await writeFile(changesFile, JSON.stringify(changes));
        return helm(
          ['upgrade', release, CHART_DIR, ...target, '--reuse-values', '--values', changesFile],
          helmEnv,
        );
      },
      uninstall: () => {
        uninstalled ??= helm(['uninstall', release, ...target], helmEnv)
          .then(() => undefined)
          .finally(() => rm(scratch, { recursive: true, force: true }));
        return uninstalled;
      },
    };
  } catch (error) {
    await rm(scratch, { recursive: true, force: true });
    throw error;
  }
}

/** Keeps helm's cache, config and data out of the user's home. */
function helmHomes(dir: string): Record<string, string> {
  return {
    HELM_CACHE_HOME: join(dir, 'cache'),
    HELM_CONFIG_HOME: join(dir, 'config'),
    HELM_DATA_HOME: join(dir, 'data'),
  };
}
