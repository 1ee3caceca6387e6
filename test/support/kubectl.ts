// kubectl as an admin of a test control plane, as the docs have users run it.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { ControlPlane } from '../../src/local/controlplane.ts';

const execFileAsync = promisify(execFile);

interface Exit {
  code?: number | string;
  stdout?: string;
  stderr?: string;
}

function run(plane: ControlPlane, args: readonly string[]) {
  return execFileAsync('kubectl', ['--kubeconfig', plane.kubeconfigPath, ...args], {
    maxBuffer: 16 * 1024 * 1024,
  });
}

/** Runs kubectl and returns its standard output; a failure says what kubectl said. */
export async function kubectl(plane: ControlPlane, ...args: string[]): Promise<string> {
  try {
    return (await run(plane, args)).stdout;
  } catch (error) {
    throw new Error(`kubectl ${args.join(' ')} failed: ${(error as Exit).stderr ?? String(error)}`);
  }
}

/**
 * `kubectl diff --server-side -f file`: what applying the file (a server-side dry run, as kubectl's own
 * field manager) would change in the cluster, as a unified diff; empty when it would change nothing.
 */
export async function kubectlDiff(plane: ControlPlane, file: string): Promise<string> {
  const args = ['diff', '--server-side', '-f', file];
  try {
    await run(plane, args);
    return '';
  } catch (error) {
    const exit = error as Exit;
    // Exit status 1 means differences were found; anything else is kubectl or diff failing.
    if (exit.code === 1 && exit.stdout) return exit.stdout;
    throw new Error(`kubectl ${args.join(' ')} failed: ${exit.stderr ?? String(error)}`);
  }
}
