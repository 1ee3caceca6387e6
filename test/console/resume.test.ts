import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dump, load } from 'js-yaml';
import { z } from 'zod';
import { objectPath, type ResourceType } from '../../src/kube/resource-type.ts';
import { RESUME } from '../../src/managed/core/annotations.ts';
import { grantTenant } from '../support/impersonation.ts';
import { manifests, resources, useStack } from '../support/operator.ts';

// `gpucloud resume gpupod/NAME` run as a process, as a tenant: the kubeconfig impersonates a user (`user.as`)
// whose only rights are the Roles given here. No operator runs and no cloud is called (no key, no API URL in
// the environment): resume is one merge-patch of an annotation with the caller's own RBAC.
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'src/cli/gpucloud.ts');
const NS = 'team-r';
const OTHER_NS = 'team-s';
/** May get and patch GpuPods in team-r: what resuming needs. */
const RESUMER = 'resume-tenant';
/** May only get GpuPods in team-r. */
const READER = 'read-only-tenant';
const PAUSE_MESSAGE =
  'paused by the operator: its GPUs stayed under 5% for 30m; it resumes when its user changes the spec or sets annotation gpucloud.io/resume (gpucloud resume)';
const stack = useStack();
let dir: string;
const kubeconfigOf = new Map<string, string>();

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** `gpucloud ARGS` with the pinned Node, as `user` (through a kubeconfig that impersonates them). */
function gpucloudAs(user: string, args: string[]): Promise<Ran> {
  const kubeconfig = kubeconfigOf.get(user);
  assert.ok(kubeconfig, `a kubeconfig for ${user}`);
  // No GPUCLOUD_API_KEY nor GPUCLOUD_API_URL: resume needs neither.
  const env = { PATH: process.env.PATH ?? '', HOME: dir, KUBECONFIG: kubeconfig };
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { env }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
    child.stdin?.end();
  });
}

/** The admin's kubeconfig with every user impersonating `user`, written to a file of its own. */
async function writeTenantKubeconfig(user: string): Promise<void> {
  const config = load(await readFile(stack.plane().kubeconfigPath, 'utf8')) as {
    users: Array<{ user: Record<string, unknown> }>;
  };
  for (const entry of config.users) entry.user.as = user;
  const path = join(dir, `${user}-kubeconfig`);
  await writeFile(path, dump(config));
  kubeconfigOf.set(user, path);
}

const metadataSchema = z.object({
  metadata: z.looseObject({
    resourceVersion: z.string(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
});

/** What a forbidden or refused resume must leave as it was: the object's resourceVersion and annotation. */
async function written(resource: ResourceType, namespace: string, name: string) {
  const obj = await stack.cluster().client.request(metadataSchema, {
    method: 'GET',
    path: objectPath(resource, { namespace, name }),
  });
  return { resourceVersion: obj.metadata.resourceVersion, resume: obj.metadata.annotations?.[RESUME] };
}

/** A GpuPod the operator (none runs here) would hold paused: status.pausedBy written through /status. */
async function pausedPod(namespace: string, name: string): Promise<void> {
  const cluster = stack.cluster();
  await cluster.create(resources.gpuPod, namespace, manifests.gpuPod(name));
  await cluster.client.request(z.unknown(), {
    method: 'PATCH',
    path: `${objectPath(resources.gpuPod, { namespace, name })}/status`,
    patchType: 'application/merge-patch+json',
    body: {
      status: {
        pausedBy: {
          reason: 'Idle',
          message: PAUSE_MESSAGE,
          since: new Date().toISOString(),
          generation: 1,
        },
      },
    },
  });
  const stored = await cluster.get(resources.gpuPod, namespace, name);
  assert.equal(
    (stored?.status?.pausedBy as { reason?: string } | undefined)?.reason,
    'Idle',
    'the status subresource kept pausedBy',
  );
}

const resumedSchema = z.object({
  kind: z.literal('GpuPod'),
  namespace: z.string(),
  name: z.string(),
  resume: z.string(),
  pausedBy: z.object({ reason: z.string(), message: z.string() }).nullable(),
});

describe('gpucloud resume, with the RBAC of the tenant who runs it', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpucloud-resume-'));
    const cluster = stack.cluster();
    for (const namespace of [NS, OTHER_NS]) await cluster.ensureNamespace(namespace);
    await grantTenant(cluster.client, NS, RESUMER, ['get', 'patch']);
    await grantTenant(cluster.client, NS, READER, ['get']);
    await writeTenantKubeconfig(RESUMER);
    await writeTenantKubeconfig(READER);
    await pausedPod(NS, 'idle-pod');
    await pausedPod(NS, 'held-pod');
    await pausedPod(OTHER_NS, 'elsewhere');
    await cluster.create(resources.gpuVm, NS, manifests.gpuVm('box'));
  });

  test('a tenant with patch on gpupods sets the resume annotation, and is told why the pod was paused', async () => {
    const before = await written(resources.gpuPod, NS, 'idle-pod');
    assert.equal(before.resume, undefined);
    const ran = await gpucloudAs(RESUMER, ['resume', 'gpupod/idle-pod', '-n', NS, '-o', 'json']);
    assert.equal(ran.code, 0, ran.stderr);
    const out = resumedSchema.parse(JSON.parse(ran.stdout));
    assert.equal(out.namespace, NS);
    assert.equal(out.name, 'idle-pod');
    assert.deepEqual(out.pausedBy, { reason: 'Idle', message: PAUSE_MESSAGE });
    assert.ok(!Number.isNaN(Date.parse(out.resume)), `the token is a time: ${out.resume}`);
    const after = await written(resources.gpuPod, NS, 'idle-pod');
    assert.equal(after.resume, out.resume, 'the annotation holds the token the command printed');
    assert.notEqual(after.resourceVersion, before.resourceVersion);
    // The table says it too, and a second resume is a new value (what lifts a pause taken since).
    const table = await gpucloudAs(RESUMER, ['resume', 'gpupod/idle-pod', '-n', NS]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /\bIdle\b/);
    assert.match(table.stdout, /GPUs stayed under 5% for 30m/);
    const again = await written(resources.gpuPod, NS, 'idle-pod');
    assert.notEqual(again.resume, after.resume);
    const missing = await gpucloudAs(RESUMER, ['resume', 'gpupod/no-such-pod', '-n', NS]);
    assert.equal(missing.code, 3, missing.stderr);
    assert.match(missing.stderr, /GpuPod team-r\/no-such-pod not found/);
  });

  test('a tenant who may only read gpupods is told it is forbidden, and nothing is written', async () => {
    const before = await written(resources.gpuPod, NS, 'held-pod');
    const ran = await gpucloudAs(READER, ['resume', 'gpupod/held-pod', '-n', NS, '-o', 'json']);
    // Exit 1, as any failure of the apiserver; the first words say what is missing, then the apiserver's.
    assert.equal(ran.code, 1, ran.stderr);
    assert.equal(ran.stdout, '', 'nothing printed as if it had worked');
    assert.match(
      ran.stderr,
      /^error: forbidden: resuming GpuPod team-r\/held-pod needs patch on gpupods \(API group gpucloud\.io\) in namespace team-r;/,
    );
    assert.match(ran.stderr, /User "read-only-tenant" cannot patch resource "gpupods"/);
    assert.deepEqual(await written(resources.gpuPod, NS, 'held-pod'), before);
    assert.equal(before.resume, undefined);
  });

  test('a tenant allowed in its own namespace cannot resume a pod in another', async () => {
    const before = await written(resources.gpuPod, OTHER_NS, 'elsewhere');
    const ran = await gpucloudAs(RESUMER, ['resume', 'gpupod/elsewhere', '-n', OTHER_NS, '-o', 'json']);
    assert.equal(ran.code, 1, ran.stderr);
    assert.equal(ran.stdout, '');
    assert.match(
      ran.stderr,
      /^error: forbidden: resuming GpuPod team-s\/elsewhere needs patch on gpupods \(API group gpucloud\.io\) in namespace team-s;/,
    );
    assert.match(ran.stderr, /User "resume-tenant" cannot patch resource "gpupods"/);
    assert.deepEqual(await written(resources.gpuPod, OTHER_NS, 'elsewhere'), before);
    assert.equal(before.resume, undefined);
  });

  test('resume with no resource, two, or a VM is a usage error, and writes nothing', async () => {
    const vmBefore = await written(resources.gpuVm, NS, 'box');
    const podBefore = await written(resources.gpuPod, NS, 'held-pod');
    for (const args of [
      ['resume', '-n', NS],
      ['resume', 'gpupod/held-pod', 'gpupod/idle-pod', '-n', NS],
      ['resume', 'gpuvm/box', '-n', NS],
      ['resume', 'held-pod', '-n', NS],
    ]) {
      const ran = await gpucloudAs(RESUMER, args);
      assert.equal(ran.code, 2, `${args.join(' ')}: exit ${ran.code}: ${ran.stderr}`);
      assert.equal(ran.stdout, '');
      assert.notEqual(ran.stderr, '');
    }
    const vm = await gpucloudAs(RESUMER, ['resume', 'gpuvm/box', '-n', NS]);
    assert.match(vm.stderr, /GpuPod/, 'it says which kind it takes');
    assert.deepEqual(await written(resources.gpuVm, NS, 'box'), vmBefore);
    assert.deepEqual(await written(resources.gpuPod, NS, 'held-pod'), podBefore);
  });
});
