import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { collectionPath } from '../../src/kube/resource-type.ts';
import type { FaultPatch } from '../../src/sim/index.ts';
import { resources } from '../../test/support/operator.ts';
import { type Life, operations } from '../driver.ts';
import { killRepeatedly } from '../killer.ts';
import { readResources } from '../kube.ts';
import type { Random } from '../random.ts';
import { churnResult, type ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { Trial } from '../trial.ts';
import { type KindName, resourceName, validSpec } from '../workload.ts';

/** Faults that send the operator down its error and recovery paths, where a careless log would leak. */
const FAULTS: FaultPatch = { errorRate: 0.1, dropRate: 0.1, dropAfterEffect: true };
const KILL_AFTER_MS: readonly [number, number] = [1_500, 4_000];
const SECRET = 'chaos-credentials';

/**
 * Scenario 6. Resources take environment values from Secrets while the cloud fails calls and the
 * operator is killed; the operator logs at debug level. Then everything the operator wrote — every
 * operator process's output in this run (all scenarios), every Event in the cluster, every custom
 * resource of this scenario, the operator's metrics — is searched for the API key and for each Secret
 * value, as written and base64-encoded: zero hits. The values must have reached the cloud, or the
 * search would prove nothing.
 */
export async function secrets(run: RunContext): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const random = run.random.fork('secrets');
  const trial = await Trial.open(run, { label: 'secrets', flags: ['--log-level', 'debug'], faults: FAULTS });
  try {
    const values = secretValues();
    await run.cluster.create(resources.secret, trial.namespace, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: SECRET },
      stringData: values,
    });
    await trial.startOperators();
    const lives = secretLives(random, run.profile.secrets.resources, Object.keys(values));
    const churn = trial.drive(lives);
    const [stats, kills] = await Promise.all([
      churn,
      killRepeatedly(trial.replica, random.fork('kills'), KILL_AFTER_MS, churn, run.profile.secrets.kills),
    ]);
    trial.sim.faults.reset();
    await trial.converge();
    const delivered = deliveredValues(trial, Object.values(values));
    const written = [
      ...run.transcripts.all().map(({ label, text }) => ({ where: `operator ${label}`, text })),
      { where: 'events', text: await allEvents(run) },
      {
        where: 'custom resources',
        text: JSON.stringify([...(await readResources(run.cluster, trial.namespace)).values()]),
      },
      { where: 'metrics', text: await trial.replica.metrics() },
    ];
    const settled = await trial.settle();
    const needles = [
      { what: 'the API key', value: run.apiKey },
      ...Object.entries(values).map(([key, value]) => ({ what: `Secret value ${key}`, value })),
    ].flatMap(({ what, value }) => [
      { what, value },
      { what: `${what} (base64)`, value: Buffer.from(value).toString('base64') },
    ]);
    const hits = needles.flatMap(({ what, value }) =>
      written.filter(({ text }) => text.includes(value)).map(({ where }) => `${what} found in ${where}`),
    );
    return churnResult({
      scenario: 'secrets',
      startedAt,
      ops: operations(stats),
      kills: kills.kills,
      ...settled,
      crashes: trial.crashes,
      apiCalls: trial.sim.calls.snapshot().total,
      figures: {
        searchedMb: Math.round(written.reduce((sum, { text }) => sum + text.length, 0) / 10_000) / 100,
        needles: needles.length,
        hits: hits.length,
        valuesInCloud: delivered,
      },
      violations: [
        ...hits,
        ...(delivered < Object.keys(values).length ? ['some Secret values never reached the cloud'] : []),
      ],
    });
  } finally {
    await trial.close();
  }
}

/** Values that are easy to find and awkward to print: JSON specials, unicode, a newline. */
function secretValues(): Record<string, string> {
  const tag = () => randomBytes(8).toString('hex');
  return {
    plain: `s3cr3t-${tag()}`,
    quoted: `"q'${tag()}\\"`,
    unicode: `ключ-${tag()}-🔑`,
    multiline: `line1-${tag()}\nline2`,
  };
}

/** Pods and endpoints that take every Secret value into their environment. */
function secretLives(random: Random, count: number, keys: readonly string[]): Life[] {
  const kinds: KindName[] = ['GpuPod', 'ServerlessEndpoint'];
  return Array.from({ length: count }, (_, index) => {
    const kind = kinds[index % kinds.length] as KindName;
    const env = keys.map((key) => ({
      key: `ENV_${key.toUpperCase()}`,
      valueFrom: { secretKeyRef: { name: SECRET, key } },
    }));
    const spec = { ...validSpec(kind, random), [kind === 'GpuPod' ? 'environmentVars' : 'envVars']: env };
    return { kind, name: resourceName(kind, index), spec, createAt: random.between(0, 5_000), changes: [] };
  });
}

/** How many of the values some cloud object carries in its environment. */
function deliveredValues(trial: Trial, values: readonly string[]): number {
  const state = trial.sim.state.snapshot();
  const environments = [...state.pods, ...state.endpoints].flatMap((object) =>
    Object.values(object.environment),
  );
  return values.filter((value) => environments.includes(value)).length;
}

async function allEvents(run: RunContext): Promise<string> {
  const list = await run.cluster.client.request(z.unknown(), {
    method: 'GET',
    path: collectionPath(resources.event),
  });
  return JSON.stringify(list);
}
