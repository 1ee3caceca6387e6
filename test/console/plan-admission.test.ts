import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';
import { CommandError, EXIT } from '../../src/console/errors.ts';
import { plan } from '../../src/console/plan.ts';
import type { Connections } from '../../src/console/target.ts';
import { type RunningSimulator, startSimulator } from '../../src/sim/index.ts';
import { admitted, pod, refused } from '../crds/admission-cases.ts';

// `gpucloud plan` with no cluster judges admission offline, by the committed CRDs' schema and CEL rules:
// every admission case the apiserver suite (test/crds/admission.test.ts) proves must get the same verdict
// here, refused with the same field and message, and an admitted one goes on to be priced. The simulator
// over HTTP is the cloud.
const CLI = fileURLToPath(new URL('../../src/cli/gpucloud.ts', import.meta.url));
const KEY = 'plan-admission-key';
let sim: RunningSimulator;
let dir: string;

describe('gpucloud plan, offline admission', () => {
  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY], transitionMs: 0 });
    dir = await mkdtemp(join(tmpdir(), 'plan-admission-'));
  });
  after(async () => {
    await sim.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const connections = (): Connections => ({
    kubeconfig: join(dir, 'no-kubeconfig'),
    apiUrl: sim.url,
    apiKey: KEY,
    env: { HOME: dir },
  });

  for (const { name, manifest } of admitted) {
    test(`admits ${name}, and prices it`, async () => {
      const { result } = await plan([{ source: 'case.yaml', object: manifest }], connections());
      assert.equal(result.admission.length, 1);
      const [verdict] = result.admission;
      assert.equal(verdict?.by, 'crds');
      assert.equal(verdict?.refused, undefined);
      assert.match(verdict?.offline ?? '', /^no cluster to read it from/);
    });
  }

  for (const { name, manifest, message } of refused) {
    test(`refuses ${name}, as the apiserver does (exit 2)`, async () => {
      await assert.rejects(plan([{ source: 'case.yaml', object: manifest }], connections()), (error) => {
        assert.ok(error instanceof CommandError, String(error));
        assert.equal(error.exitCode, EXIT.usage);
        assert.match(error.message, message);
        assert.match(error.message, /judged offline by the CRDs' schema and rules: no cluster/);
        return true;
      });
    });
  }

  /** `gpucloud plan -f FILE` as a user runs it: a cloud key and no cluster. */
  async function planFile(name: string, object: object) {
    const file = join(dir, `${name}.yaml`);
    await writeFile(file, dump(object));
    const env = { PATH: process.env.PATH ?? '', HOME: dir, GPUCLOUD_API_URL: sim.url, GPUCLOUD_API_KEY: KEY };
    return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, [CLI, 'plan', '-f', file], { env }, (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin?.end();
    });
  }

  test('a price cap without isSpot is refused by its rule, not priced (exit 2, not 0)', async () => {
    const ran = await planFile('spotless', pod({ maxPrice: 5 }, 'spotless'));
    assert.equal(ran.code, EXIT.usage, `exit ${ran.code}: ${ran.stdout}${ran.stderr}`);
    assert.match(
      ran.stderr,
      /spotless\.yaml: GpuPod default\/spotless: GpuPod\.gpucloud\.io "spotless" is invalid: spec\.maxPrice: Invalid value: maxPrice is only valid for spot pods: set isSpot: true or remove maxPrice/,
    );
    assert.equal(ran.stdout, '', 'nothing priced');
  });

  test('3 GPUs are refused by the power-of-2 rule, not as "no offer" (exit 2, not 6)', async () => {
    const ran = await planFile('three', pod({ gpuCount: 3 }, 'three'));
    assert.equal(ran.code, EXIT.usage, `exit ${ran.code}: ${ran.stdout}${ran.stderr}`);
    assert.match(
      ran.stderr,
      /spec\.gpuCount: Invalid value: 3: gpuCount must be a power of 2 \(1, 2, 4, 8, \.\.\.\)/,
    );
  });
});
