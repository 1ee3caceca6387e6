// The Helm chart installed into a test control plane, and a kubeconfig that authenticates as the chart's
// ServiceAccount: run the operator with it to prove the chart's RBAC is all the operator needs.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Deployment } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import type { ControlPlane } from '../../src/local/controlplane.ts';
import { CHART_DIR, helm } from '../../tools/helm/helm.ts';

export interface ChartInstallOptions {
  /** Default `gpucloud-operator`, which is also the fullname of every object. */
  release?: string;
  /** Created when missing. Default `gpucloud-system`. */
  namespace?: string;
  /** Values on top of the chart defaults, as for `helm install -f`. */
  values?: Record<string, unknown>;
}

export interface InstalledChart {
  release: string;
  namespace: string;
  /** The chart's ServiceAccount, in `namespace`. */
  serviceAccount: string;
  /** What `helm install` told the user to do next (the chart's NOTES.txt). */
  notes: string;
  /** Authenticates as the ServiceAccount (a TokenRequest token, valid for an hour). */
  kubeconfigPath: string;
  /** `helm uninstall`, once however often called; the CRDs stay, as they do for users. */
  uninstall(): Promise<void>;
}

const TOKEN_SECONDS = 3600;

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
    const token = await serviceAccountToken(plane, namespace, serviceAccount);
    return {
      release,
      namespace,
      serviceAccount,
      notes: installed.slice(installed.indexOf('NOTES:\n') + 'NOTES:\n'.length),
      kubeconfigPath: await plane.kubeconfigForToken(token, `${namespace}.${serviceAccount}`),
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

/** The identity the operator Deployment of the release runs as. */
function serviceAccountOf(manifest: string): string {
  const objects = loadAll(manifest) as Array<V1Deployment | null>;
  const name = objects.find((object) => object?.kind === 'Deployment')?.spec?.template.spec
    ?.serviceAccountName;
  if (!name) throw new Error('the installed release has no Deployment with a serviceAccountName');
  return name;
}

async function serviceAccountToken(plane: ControlPlane, namespace: string, name: string): Promise<string> {
  const core = plane.kubeConfig.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: TOKEN_SECONDS } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`the apiserver issued no token for ServiceAccount ${namespace}/${name}`);
  return token;
}

/** Keeps helm's cache, config and data out of the user's home. */
function helmHomes(dir: string): Record<string, string> {
  return {
    HELM_CACHE_HOME: join(dir, 'cache'),
    HELM_CONFIG_HOME: join(dir, 'config'),
    HELM_DATA_HOME: join(dir, 'data'),
  };
}
