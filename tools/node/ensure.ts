// Prepares the machine for the local node (src/local/node.ts), cached and idempotent: the Debian packages
// it runs (containerd, runc, the CNI plugins) and its sandbox image. The kubelet and kube-scheduler come
// with the control plane binary (tools/controlplane). Usage: node tools/node/ensure.ts
import { ensureNodePackages } from './packages.ts';
import { ensurePauseImage } from './pause-image.ts';

export async function ensureNode(progress: (line: string) => void): Promise<void> {
  const installed = await ensureNodePackages();
  progress(
    installed.length > 0 ? `installed ${installed.join(', ')}` : 'containerd, runc, CNI plugins: installed',
  );
  progress(`sandbox image: ${await ensurePauseImage()}`);
}

if (import.meta.main) {
  try {
    await ensureNode((line) => console.error(line));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
