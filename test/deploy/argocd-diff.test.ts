import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dump } from 'js-yaml';
import {
  isReady,
  manifests,
  type RunningOperator,
  resources,
  startOperator,
  useStack,
} from '../support/operator.ts';

// Argo CD compares a live object with its manifest by the three-way merge `kubectl apply` performs
// (client-side, by default) or by a server-side apply dry run (ServerSideDiff). Both must see nothing
// to change once the operator has late-initialised fields the manifest leaves out.
const execFileAsync = promisify(execFile);
const NS = 'argocd-diff';
const stack = useStack();
let operator: RunningOperator;
let dir: string;

async function kubectl(...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await execFileAsync('/usr/bin/kubectl', [
      '--kubeconfig',
      stack.plane().kubeconfigPath,
      ...args,
    ]);
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number' || failed.code > 1) throw error;
    return { code: failed.code, stdout: failed.stdout ?? '' };
  }
}

describe('late-initialised fields and a GitOps diff', () => {
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    operator = await startOperator(stack.plane(), stack.sim());
    dir = await mkdtemp(join(tmpdir(), 'argocd-diff-'));
  });
  after(async () => {
    await operator.stop();
  });

  for (const mode of ['client-side', 'server-side'] as const) {
    test(`an endpoint applied ${mode} without workers or stopped shows no diff once they are filled`, async () => {
      const name = `diff-${mode}`;
      const { workers: _w, ...spec } = manifests.serverlessEndpoint(name).spec;
      const file = join(dir, `${name}.yaml`);
      await writeFile(file, dump({ ...manifests.serverlessEndpoint(name), spec }));
      const flags = mode === 'server-side' ? ['--server-side'] : [];
      await kubectl('apply', '-n', NS, '-f', file, ...flags);
      const ready = await stack.cluster().waitFor(resources.serverlessEndpoint, NS, name, isReady(), 'Ready');
      assert.equal(ready?.spec?.workers, 1, 'workers was late-initialised');
      assert.equal(ready?.spec?.stopped, false, 'stopped was late-initialised');
      const diff = await kubectl('diff', '-n', NS, '-f', file, ...flags);
      assert.equal(diff.code, 0, `kubectl diff reports a difference:\n${diff.stdout}`);
    });
  }

  test('a field the manifest does set still shows as a diff when the live object differs', async () => {
    const name = 'diff-real';
    const file = join(dir, `${name}.yaml`);
    await writeFile(file, dump(manifests.serverlessEndpoint(name, { workers: 1 })));
    await kubectl('apply', '-n', NS, '-f', file);
    await stack.cluster().waitFor(resources.serverlessEndpoint, NS, name, isReady(), 'Ready');
    await stack.cluster().patch(resources.serverlessEndpoint, NS, name, { spec: { workers: 2 } });
    const diff = await kubectl('diff', '-n', NS, '-f', file);
    assert.equal(diff.code, 1);
    assert.match(diff.stdout, /workers: [12]/);
  });
});
