// What the node takes from the host's packages (Debian's containerd, runc and containernetworking-plugins),
// installed by tools/node/ensure.ts (npm test does it first).
import { access, constants } from 'node:fs/promises';
import { join } from 'node:path';

export interface HostTools {
  containerd: string;
  ctr: string;
  runc: string;
  /** Where the CNI plugins are: the bridge, host-local and loopback ones are used. */
  cniBinDir: string;
}

const TOOLS: HostTools = {
  containerd: '/usr/bin/containerd',
  ctr: '/usr/bin/ctr',
  runc: '/usr/sbin/runc',
  cniBinDir: '/usr/lib/cni',
};

const REQUIRED = [
  TOOLS.containerd,
  TOOLS.ctr,
  '/usr/bin/containerd-shim-runc-v2',
  TOOLS.runc,
  ...['bridge', 'host-local', 'loopback'].map((plugin) => join(TOOLS.cniBinDir, plugin)),
];

export class NodeHostToolsMissingError extends Error {
  override readonly name = 'NodeHostToolsMissingError';
}

export async function resolveHostTools(): Promise<HostTools> {
  const missing: string[] = [];
  for (const path of REQUIRED) {
    if (
      !(await access(path, constants.X_OK).then(
        () => true,
        () => false,
      ))
    )
      missing.push(path);
  }
  if (missing.length > 0) {
    throw new NodeHostToolsMissingError(
      `the local node needs ${missing.join(', ')}: install them with \`node tools/node/ensure.ts\` (as root; npm test does this first)`,
    );
  }
  return TOOLS;
}
