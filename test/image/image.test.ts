// The image the Dockerfile makes, built by `npm run image` (buildah, on the stand-in base) and run with runc
// as the chart runs it: its own user, a read-only root filesystem, no capabilities, a tmpfs at /tmp.
import assert from 'node:assert/strict';
import { globSync } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { load } from 'js-yaml';
import { FLAGS } from '../../src/operator/config.ts';
import { CHART_DIR } from '../../tools/helm/helm.ts';
import { type ArchiveImage, readArchive, scanLayer } from '../../tools/image/archive.ts';
import { type BuiltImage, ensureImage } from '../../tools/image/ensure.ts';
import { type ImageRoot, mountImage, runImage } from '../../tools/image/run.ts';
import { HOST_CA_BUNDLE, REPO_ROOT } from '../../tools/image/settings.ts';

const BUILD_TIMEOUT_MS = 20 * 60_000;

/** Each certificate of a PEM bundle, as one of its base64 lines: 48 bytes of it, unique to it. */
function certificateLines(bundle: string): Map<string, string> {
  const lines = new Map<string, string>();
  for (const [, body] of bundle.matchAll(
    /-----BEGIN CERTIFICATE-----\n([\s\S]*?)-----END CERTIFICATE-----/g,
  )) {
    const base64 = (body ?? '').split('\n').filter((line) => line.length === 64);
    // The middle of the certificate: its key, not a subject line that certificates of one issuer share.
    const line = base64[Math.floor(base64.length / 2)];
    if (line) lines.set(line, (body ?? '').replaceAll('\n', ''));
  }
  return lines;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

describe('the operator image', () => {
  let image: BuiltImage;
  let archive: ArchiveImage;
  let root: ImageRoot | undefined;
  const mounted = () => {
    if (!root) throw new Error('the image root is mounted in before()');
    return root;
  };

  before(
    async () => {
      image = await ensureImage((line) => console.log(line));
      archive = await readArchive(image.archive);
      root = await mountImage(image);
    },
    { timeout: BUILD_TIMEOUT_MS },
  );
  after(async () => {
    await root?.remove();
  });

  test("its configuration: the chart's numeric user, the operator's entry point, a writable HOME", async () => {
    const { config } = archive.config;
    const values = load(await readFile(join(CHART_DIR, 'values.yaml'), 'utf8')) as {
      podSecurityContext: { runAsUser: number; runAsGroup: number };
    };
    assert.equal(
      config.User,
      `${values.podSecurityContext.runAsUser}:${values.podSecurityContext.runAsGroup}`,
    );
    assert.equal(config.User, '65532:65532');
    assert.deepEqual(config.Entrypoint, ['node', 'dist/cli/operator.js']);
    assert.equal(config.WorkingDir, '/app');
    assert.ok(config.Env.includes('HOME=/tmp'), config.Env.join(' '));
    assert.ok(config.Env.includes('NODE_ENV=production'), config.Env.join(' '));
  });

  test('--help answers and exits 0 as uid 65532, with a read-only root filesystem and no capabilities', async () => {
    const help = await runImage(mounted(), { args: ['--help'] });
    assert.equal(help.code, 0, help.stderr);
    // --help answers only once every module of the entry point has loaded from the image.
    for (const { flag, env } of Object.values(FLAGS)) {
      assert.match(help.stdout, new RegExp(`--${flag}\\s+env ${env}\\b`));
    }
  });

  test('the run is confined as the chart asks: the right user, no capability, root read-only, /tmp writable', async () => {
    // The same runtime settings as --help above, with node asked what it may do.
    const script = `
      const fs = require('node:fs');
      const status = fs.readFileSync('/proc/self/status', 'utf8');
      const field = (name) => new RegExp('^' + name + ':\\\\s+(.*)$', 'm').exec(status)[1].split(/\\s+/);
      const tryWrite = (path) => { try { fs.writeFileSync(path, 'x'); return 'written'; } catch (e) { return e.code; } };
      console.log(JSON.stringify({
        uid: field('Uid'), gid: field('Gid'), capEff: field('CapEff')[0], capBnd: field('CapBnd')[0],
        noNewPrivs: field('NoNewPrivs')[0], app: tryWrite('/app/probe'), root: tryWrite('/probe'), tmp: tryWrite('/tmp/probe'),
      }));`;
    const probe = await runImage(mounted(), { entrypoint: ['node', '-e', script] });
    assert.equal(probe.code, 0, probe.stderr);
    assert.deepEqual(JSON.parse(probe.stdout), {
      uid: ['65532', '65532', '65532', '65532'],
      gid: ['65532', '65532', '65532', '65532'],
      capEff: '0000000000000000',
      capBnd: '0000000000000000',
      noNewPrivs: '1',
      app: 'EROFS',
      root: 'EROFS',
      tmp: 'written',
    });
  });

  test('/app holds the compiled build and the production dependencies, nothing else', async () => {
    const app = join(mounted().rootfs, 'app');
    assert.deepEqual(globSync('*', { cwd: app }).sort(), [
      'dist',
      'node_modules',
      'package-lock.json',
      'package.json',
    ]);
    assert.ok(await exists(join(app, 'dist/cli/operator.js')));
    const lock = JSON.parse(await readFile(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const installed = Object.entries(lock.packages).filter(([path]) => path.startsWith('node_modules/'));
    const devOnly = installed.filter(([, entry]) => entry.dev).map(([path]) => path);
    for (const expected of [
      'node_modules/typescript',
      'node_modules/@biomejs/biome',
      'node_modules/@stryker-mutator/core',
    ]) {
      assert.ok(devOnly.includes(expected), `the lock marks ${expected} as dev`);
    }
    const shipped = await Promise.all(
      devOnly.map(async (path) => ((await exists(join(app, path))) ? path : '')),
    );
    assert.deepEqual(shipped.filter(Boolean), [], 'development-only packages in the image');
    for (const [path] of installed.filter(([, entry]) => !entry.dev)) {
      assert.ok(await exists(join(app, path)), `${path} is missing from the image`);
    }
  });

  test('no test, no source and no npm configuration anywhere in the image', () => {
    const { rootfs } = mounted();
    assert.deepEqual(globSync(['app/test', 'app/src', 'src', 'test'], { cwd: rootfs }), []);
    const npmrcs = globSync(['**/npmrc', '**/.npmrc', 'root/.npmrc', 'tmp/.npmrc', 'usr/local/etc/*'], {
      cwd: rootfs,
    });
    assert.deepEqual(npmrcs, []);
    assert.deepEqual(
      archive.config.config.Env.filter((entry) => /^npm_config_/i.test(entry)),
      [],
      'npm settings in the image environment',
    );
  });

  test("no layer holds a certificate of the host's bundle that Debian's ca-certificates does not ship", async () => {
    const host = certificateLines(await readFile(HOST_CA_BUNDLE, 'utf8'));
    const shipped = certificateLines(
      await readFile(join(mounted().rootfs, 'etc/ssl/certs/ca-certificates.crt'), 'utf8'),
    );
    const buildOnly = [...host.keys()].filter((line) => !shipped.has(line));
    // Control: a certificate the base ships is found, so the search would find the build's if it were there.
    const control = [...shipped.keys()][0];
    assert.ok(control, 'the image trusts some certificate');
    const found = new Set<string>();
    for (const layer of archive.layers) {
      for (const needle of (await scanLayer(image.archive, layer, [control, ...buildOnly])).found)
        found.add(needle);
    }
    assert.ok(found.has(control), 'the search finds a certificate the base ships');
    const leaked = buildOnly.filter((line) => found.has(line));
    assert.deepEqual(
      leaked,
      [],
      `${leaked.length} of the host's ${buildOnly.length} extra certificates are in the image`,
    );
  });
});
