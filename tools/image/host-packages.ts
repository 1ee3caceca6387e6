// Installs the image build's tools from Debian's archive when the machine lacks them, so that a fresh
// machine builds the image with nothing installed by hand.
import { ImageBuildError, runCommand } from './command.ts';

/** Debian packages the build and the image checks run: buildah builds, runc runs, mmdebstrap makes the base. */
export const HOST_PACKAGES = ['buildah', 'runc', 'mmdebstrap'] as const;

interface Policy {
  installed: boolean;
  candidate: boolean;
}

/** `apt-cache policy` for each package: whether it is installed, and whether the archive offers it. */
async function policies(packages: readonly string[]): Promise<Map<string, Policy>> {
  const output = await runCommand('apt-cache', ['policy', ...packages], {
    env: { ...process.env, LC_ALL: 'C' },
  });
  const result = new Map<string, Policy>();
  for (const block of output.split(/^(?=\S+:$)/m)) {
    const name = /^(\S+):$/m.exec(block)?.[1];
    if (!name) continue;
    const installed = /^\s+Installed: (.+)$/m.exec(block)?.[1];
    const candidate = /^\s+Candidate: (.+)$/m.exec(block)?.[1];
    result.set(name, {
      installed: installed !== undefined && installed !== '(none)',
      candidate: candidate !== undefined && candidate !== '(none)',
    });
  }
  return result;
}

export async function ensureHostPackages(progress: (line: string) => void): Promise<void> {
  const missing = (wanted: ReadonlyMap<string, Policy>) =>
    HOST_PACKAGES.filter((name) => !wanted.get(name)?.installed);
  const before = missing(await policies(HOST_PACKAGES));
  if (before.length === 0) return;
  if (process.getuid?.() !== 0) {
    throw new ImageBuildError(
      `the image build needs ${before.join(', ')} from Debian: run \`apt-get install ${before.join(' ')}\` as root`,
    );
  }
  progress(`installing ${before.join(', ')} from Debian's archive`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive', LC_ALL: 'C' };
  await runCommand('apt-get', ['update'], { env, progress });
  const offered = await policies(before);
  const unavailable = before.filter((name) => !offered.get(name)?.candidate);
  if (unavailable.length > 0) {
    throw new ImageBuildError(`Debian's archive as configured here offers no ${unavailable.join(', ')}`);
  }
  await runCommand('apt-get', ['install', '-y', '--no-install-recommends', ...before], { env, progress });
}
