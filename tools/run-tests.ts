// Runs the tests in two tiers, the unit tier first so that a broken core fails in seconds:
//   unit         no process of ours beyond the test itself: no apiserver, no operator process, no build
//   integration  the real parts: the local apiserver (and controller-manager, scheduler, node), operator
//                processes, helm, promtool, the chaos suite
// A file's tier follows from what it imports, transitively within the repository: reaching one of
// INTEGRATION_MODULES makes it an integration test. Usage: node tools/run-tests.ts [unit|integration|all]
// [-- node --test options]; `all` (the default) runs the unit tier and, if it passes, the integration tier.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, globSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = resolve(import.meta.dirname, '..');

/** Modules that start or build a real part: importing one, directly or not, makes a test an integration test. */
const INTEGRATION_MODULES = [
  'src/local/controlplane.ts',
  'src/local/stack.ts',
  'src/local/controller-manager.ts',
  'src/local/scheduler.ts',
  'src/local/node.ts',
  'test/support/operator-process.ts',
  'test/support/chart.ts',
  'chaos/run-context.ts',
  'tools/helm/ensure.ts',
  'tools/prometheus/ensure.ts',
  'tools/argocd-health/ensure.ts',
  'tools/image/ensure.ts',
].map((path) => resolve(ROOT, path));

/** Tests that build or pack the project itself (tsc, npm pack): seconds of CPU, not a unit's milliseconds. */
const BUILDS = ['test/api/package.test.ts'];

/** Integration tests that time things closely: after the others, alone, so that no neighbour's load decides them. */
const TIMED = ['test/controller/leader-election.test.ts'];

/**
 * Integration tests that run last, in two lanes side by side: each loads the machine in bursts (the chaos
 * suite runs several operator processes and a control plane, the node files a kubelet and containerd) but
 * mostly waits (each used about a quarter of the two cores, measured alone), so two together leave half of
 * the machine idle, where either beside the four-at-a-time integration files (both cores busy) would turn
 * into a test of the machine.
 */
const LANES: readonly (readonly string[])[] = [
  ['test/chaos/short.test.ts'],
  [
    // A kubelet and containerd beside the control plane: the heaviest start of all.
    'test/node/node.test.ts',
    // The chart and the plain manifests running the operator's image on that node (one node for the file).
    'test/node/chart.test.ts',
  ],
];
const ALONE = [...TIMED, ...LANES.flat()];

const IMPORT =
  /(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)]
    .map((match) => resolve(dirname(file), match[1] ?? match[2] ?? ''))
    .filter((path) => existsSync(path));
}

const verdicts = new Map<string, boolean>();

function reachesIntegration(file: string, visiting = new Set<string>()): boolean {
  const known = verdicts.get(file);
  if (known !== undefined) return known;
  if (INTEGRATION_MODULES.includes(file)) return true;
  if (visiting.has(file)) return false;
  visiting.add(file);
  const verdict = importsOf(file).some((path) => reachesIntegration(path, visiting));
  verdicts.set(file, verdict);
  return verdict;
}

export function tiers(): { unit: string[]; integration: string[]; alone: string[] } {
  const files = globSync('test/**/*.test.ts', { cwd: ROOT }).sort();
  const unit: string[] = [];
  const integration: string[] = [];
  const alone: string[] = [];
  for (const file of files) {
    if (ALONE.includes(file)) alone.push(file);
    else (BUILDS.includes(file) || reachesIntegration(resolve(ROOT, file)) ? integration : unit).push(file);
  }
  return { unit, integration, alone };
}

/**
 * V8's compile cache for every process of the run (test files, operator processes): each of the ~200 test
 * processes compiles the same modules, and with the cache a warm start imports them in half the CPU time.
 * Node checks each entry against its source, so an edited file is compiled afresh.
 */
const COMPILE_CACHE = join(homedir(), '.cache', 'gpucloud-operator', 'node-compile-cache');

function testArgs(files: readonly string[], options: readonly string[]): string[] {
  return ['--test', ...options, ...files];
}

const ENV = { NODE_COMPILE_CACHE: COMPILE_CACHE, ...process.env };

function run(name: string, files: readonly string[], options: readonly string[]): number {
  console.log(`\n=== ${name} tier: ${files.length} files ===`);
  const result = spawnSync(process.execPath, testArgs(files, options), {
    cwd: ROOT,
    stdio: 'inherit',
    env: ENV,
  });
  return result.status ?? 1;
}

/**
 * Each lane's files one at a time, the lanes side by side, every line of a lane's report prefixed with the
 * lane's number so that two reports read apart. Failed when any lane failed.
 */
async function runLanes(name: string, lanes: readonly (readonly string[])[], options: readonly string[]) {
  console.log(`\n=== ${name} tier: ${lanes.flat().length} files in ${lanes.length} lanes ===`);
  const statuses = await Promise.all(
    lanes.map(
      (files, lane) =>
        new Promise<number>((done) => {
          const child = spawn(process.execPath, testArgs(files, ['--test-concurrency=1', ...options]), {
            cwd: ROOT,
            stdio: ['ignore', 'pipe', 'pipe'],
            env: ENV,
          });
          for (const stream of [child.stdout, child.stderr]) {
            createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) =>
              console.log(`[${lane + 1}] ${line}`),
            );
          }
          child.on('close', (code) => done(code ?? 1));
        }),
    ),
  );
  return statuses.find((status) => status !== 0) ?? 0;
}

if (import.meta.main) {
  const [which = 'all', ...rest] = process.argv.slice(2).filter((arg) => arg !== '--');
  const { unit, integration, alone } = tiers();
  // Unit tests share nothing but the CPU. Integration tests each start a control plane of their own
  // and mostly wait on it, so four run at once (the whole tier used under one of the two cores at three); then TIMED, then LANES.
  let status = 0;
  if (which === 'unit' || which === 'all') status = run('unit', unit, ['--test-concurrency=2', ...rest]);
  if (status === 0 && (which === 'integration' || which === 'all')) {
    status = run('integration', integration, ['--test-concurrency=4', ...rest]);
    if (status === 0) status = run('integration (timed)', TIMED, ['--test-concurrency=1', ...rest]);
    if (status === 0) status = await runLanes('integration (lanes)', LANES, rest);
  }
  if (which === 'list') {
    console.log(JSON.stringify({ unit, integration, alone }, null, 2));
  }
  process.exit(status);
}
