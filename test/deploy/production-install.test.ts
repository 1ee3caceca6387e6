import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { load } from 'js-yaml';
import { FLAGS } from '../../src/operator/config.ts';
import { REPO_ROOT } from '../../tools/helm/artifacts.ts';
import { CHART_DIR } from '../../tools/helm/helm.ts';

// What the image holds, without a Docker engine: the production dependencies alone (`npm ci --omit=dev`,
// as the Dockerfile's runtime stage) and the compiled dist/, in a clean folder. The entry point must load
// every module from there; --help answers only after all of them are loaded.

const execFileAsync = promisify(execFile);

interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<Exit> {
  try {
    const { stdout, stderr } = await execFileAsync(command, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** The final stage of the Dockerfile: its instructions from the last FROM on. */
async function runtimeStage(): Promise<string> {
  const dockerfile = await readFile(join(REPO_ROOT, 'Dockerfile'), 'utf8');
  return dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
}

describe('the production install', () => {
  let app: string;
  // No inherited variable (GPUCLOUD_API_KEY, KUBECONFIG, …) may satisfy the configuration by accident.
  const bareEnv = { PATH: process.env.PATH ?? '', HOME: tmpdir() };

  before(async () => {
    app = await mkdtemp(join(tmpdir(), 'gpucloud-production-'));
    for (const file of ['package.json', 'package-lock.json']) {
      await copyFile(join(REPO_ROOT, file), join(app, file));
    }
    const install = await run(
      'npm',
      ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'],
      app,
      process.env,
    );
    assert.equal(install.code, 0, `npm ci --omit=dev failed:\n${install.stderr}`);
    const tsc = join(REPO_ROOT, 'node_modules', '.bin', 'tsc');
    const build = await run(
      tsc,
      ['-p', join(REPO_ROOT, 'tsconfig.build.json'), '--outDir', join(app, 'dist')],
      REPO_ROOT,
      process.env,
    );
    assert.equal(build.code, 0, `the build failed:\n${build.stdout}${build.stderr}`);
  });

  after(async () => {
    if (app) await rm(app, { recursive: true, force: true });
  });

  test('holds no package the lock marks as development-only', async () => {
    const lock = JSON.parse(await readFile(join(app, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const devOnly = Object.entries(lock.packages).filter(([, entry]) => entry.dev);
    assert.ok(
      devOnly.some(([path]) => path === 'node_modules/typescript'),
      'the lock marks typescript as dev',
    );
    for (const [path] of devOnly) assert.equal(await exists(join(app, path)), false, `${path} was installed`);
  });

  test('the entry point loads every module and lists every flag', async () => {
    const help = await run(process.execPath, ['dist/cli/operator.js', '--help'], app, bareEnv);
    assert.equal(help.code, 0, help.stderr);
    for (const { flag, env } of Object.values(FLAGS)) {
      assert.match(help.stdout, new RegExp(`--${flag}\\s+env ${env}\\b`));
    }
  });

  test('without an API key it stops at the configuration with exit code 2 and says what is missing', async () => {
    const result = await run(
      process.execPath,
      ['dist/cli/operator.js', '--api-url=https://api.gpucloud.example'],
      app,
      bareEnv,
    );
    assert.equal(result.code, 2);
    assert.match(result.stderr, /no API key: set --api-key-file/);
  });

  test('the image runs that entry point as PID 1, as the numeric user the chart asks for', async () => {
    const stage = await runtimeStage();
    assert.match(stage, /^ENTRYPOINT \["node", "dist\/cli\/operator\.js"\]$/m);
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    // The image runs the operator's bin; the CLI's bins are for users' machines.
    assert.equal(pkg.bin['gpucloud-operator'], 'dist/cli/operator.js');

    const user = /^USER (\d+):(\d+)$/m.exec(stage);
    const values = load(await readFile(join(CHART_DIR, 'values.yaml'), 'utf8')) as {
      podSecurityContext: { runAsUser: number; runAsGroup: number };
    };
    assert.deepEqual(
      [Number(user?.[1]), Number(user?.[2])],
      [values.podSecurityContext.runAsUser, values.podSecurityContext.runAsGroup],
    );
  });

  test('the image is built on the Node version the project pins', async () => {
    const dockerfile = await readFile(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    assert.match(dockerfile, new RegExp(`^ARG NODE_VERSION=${pkg.devDependencies.node}$`, 'm'));
  });
});
