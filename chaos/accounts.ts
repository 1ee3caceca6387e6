import { type Cluster, resources } from '../test/support/operator.ts';
import { poll } from '../test/support/until.ts';

/** How long a deleted ProviderConfig may take to go: the operator releases it once nothing uses it. */
const RELEASE_TIMEOUT_MS = 30_000;

/**
 * Deletes a scenario's ProviderConfig account and its key Secret (`<name>-key` in `namespace`); false if
 * its finalizer never let it go, in which case it is released by hand, so that later scenarios do not see it.
 */
export async function removeAccount(cluster: Cluster, namespace: string, name: string): Promise<boolean> {
  await cluster.delete(resources.secret, namespace, `${name}-key`).catch(() => undefined);
  await cluster.delete(resources.providerConfig, '', name).catch(() => undefined);
  try {
    await poll(
      () => cluster.get(resources.providerConfig, '', name),
      (obj) => obj === undefined,
      `ProviderConfig ${name} gone`,
      RELEASE_TIMEOUT_MS,
    );
    return true;
  } catch {
    await cluster
      .patch(resources.providerConfig, '', name, { metadata: { finalizers: null } })
      .catch(() => undefined);
    return false;
  }
}
