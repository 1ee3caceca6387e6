import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PROFILES } from '../../chaos/profiles.ts';
import { freshSeed } from '../../chaos/random.ts';
import { summaryLine } from '../../chaos/report.ts';
import { type StartedRun, startRun } from '../../chaos/run-context.ts';
import { SCENARIO_NAMES } from '../../chaos/scenarios/index.ts';
import { playScenario } from '../../chaos/suite.ts';

// The chaos suite's short profile (`npm run chaos` plays the full one). Every scenario must keep its
// invariants: no duplicate, no leak, no stuck finalizer, no crash, no hot loop, no leaked secret. Its
// timing targets (failover time, API-call ratio, convergence bound) are reported as diagnostics, not
// asserted: they are measured by the full run. A failure names its seed; CHAOS_SEED=<seed> replays it.
const seed = process.env.CHAOS_SEED === undefined ? freshSeed() : Number(process.env.CHAOS_SEED);

describe(`chaos suite, short profile, seed ${seed}`, () => {
  let run: StartedRun | undefined;
  before(async () => {
    run = await startRun(PROFILES.short, seed, () => {});
  });
  after(async () => {
    await run?.stop();
  });

  for (const name of SCENARIO_NAMES) {
    test(name, async (t) => {
      if (!run) throw new Error('the control plane did not start');
      const result = await playScenario(run, name);
      t.diagnostic(summaryLine(result));
      for (const missed of result.missedTargets) t.diagnostic(`target missed: ${missed}`);
      if (result.violations.length > 0) {
        const logs = join(tmpdir(), `gpucloud-chaos-${seed}`);
        await run.transcripts.save(logs);
        assert.fail(
          `seed ${seed}, operator logs in ${logs}:\n${[...result.violations, ...result.notes].join('\n')}`,
        );
      }
    });
  }
});
