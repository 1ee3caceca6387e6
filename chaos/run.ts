// The chaos suite: `npm run chaos -- [--profile short|full] [--seed N] [--only a,b] [--out file]`.
// Exit status: 0 all well; 1 an invariant broke (duplicate, leak, stuck finalizer, crash, leaked
// secret, hot loop...); 2 bad options; 3 only a target (time, ratio, rate) was missed.
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { type ChaosOptions, parseOptions, USAGE } from './options.ts';
import { PROFILES } from './profiles.ts';
import { freshSeed } from './random.ts';
import { type ScenarioResult, summaryLine } from './report.ts';
import { startRun } from './run-context.ts';
import { playScenario } from './suite.ts';

let options: ChaosOptions;
try {
  options = parseOptions(process.argv.slice(2));
} catch (error) {
  console.error(`chaos: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  process.exit(2);
}

const seed = options.seed ?? freshSeed();
const profile = PROFILES[options.profile];
const log = (line: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
console.log(
  `chaos: profile ${profile.name}, seed ${seed} (replay: npm run chaos -- --profile ${profile.name} --seed ${seed})`,
);

const startedAt = new Date();
const results: ScenarioResult[] = [];
const run = await startRun(profile, seed, log);
try {
  for (const name of options.only) {
    const result = await playScenario(run, name);
    results.push(result);
    console.log(summaryLine(result));
    for (const line of [...result.violations, ...result.missedTargets]) console.log(`  - ${line}`);
  }
} finally {
  await run.stop();
}

const machine = {
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model ?? 'unknown',
  memoryGb: Math.round(totalmem() / 2 ** 30),
  node: process.version,
};
await mkdir(dirname(options.out), { recursive: true });
await writeFile(
  options.out,
  `${JSON.stringify({ profile: profile.name, seed, startedAt, machine, results }, null, 2)}\n`,
);
const transcriptDir = join(dirname(options.out), 'transcripts');
await run.transcripts.save(transcriptDir);
console.log(`chaos: results in ${options.out}, operator logs in ${transcriptDir}`);

const violated = results.some((result) => result.violations.length > 0);
const missed = results.some((result) => result.missedTargets.length > 0);
process.exit(violated ? 1 : missed ? 3 : 0);
