// The node's Debian packages: containerd (1.6 on bookworm), runc and the CNI plugins. Installed with
// apt-get when missing (an update first), as root; nothing is started or enabled by installing them here.
import { run } from '../../src/local/node/run.ts';

export const NODE_PACKAGES = ['containerd', 'runc', 'containernetworking-plugins'] as const;

/** Waits for another apt or dpkg (a colleague's install) rather than failing on its lock. */
const APT_LOCK_TIMEOUT = ['-o', 'DPkg::Lock::Timeout=300'];

export class NodePackagesError extends Error {
  override readonly name = 'NodePackagesError';
}

/** Installs whichever of NODE_PACKAGES is missing; returns the ones it installed. */
export async function ensureNodePackages(): Promise<string[]> {
  const missing: string[] = [];
  for (const name of NODE_PACKAGES) if (!(await installed(name))) missing.push(name);
  if (missing.length === 0) return [];
  if (process.getuid?.() !== 0) {
    throw new NodePackagesError(
      `the local node needs the Debian packages ${missing.join(', ')}: install them as root`,
    );
  }
  await run('apt-get', [...APT_LOCK_TIMEOUT, 'update', '-q']).catch((error: unknown) => {
    throw new NodePackagesError(
      `apt-get update failed (the node needs ${missing.join(', ')}): ${String(error)}`,
    );
  });
  await run('env', [
    'DEBIAN_FRONTEND=noninteractive',
    'apt-get',
    ...APT_LOCK_TIMEOUT,
    'install',
    '-y',
    '-q',
    '--no-install-recommends',
    ...missing,
  ]);
  return missing;
}

async function installed(name: string): Promise<boolean> {
  try {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format field.
    const status = await run('dpkg-query', ['-W', '-f', '${Status}', name]);
    return status.trim() === 'install ok installed';
  } catch {
    return false;
  }
}
