import { z } from 'zod';
import { collectionPath } from '../../src/kube/resource-type.ts';
import { sleep } from '../../src/lib/delay.ts';
import { condition, isReady, manifests, resources, type TestObject } from '../../test/support/operator.ts';
import { poll } from '../../test/support/until.ts';
import { killRepeatedly } from '../killer.ts';
import { persistently } from '../kube.ts';
import { countMessages } from '../reconcile-log.ts';
import { round, type ScenarioResult } from '../report.ts';
import type { RunContext } from '../run-context.ts';
import { Trial } from '../trial.ts';

/** Answers this late make a kill between a submit and its recorded id likely, as in operator-crashes. */
const ANSWER_DELAY_MS = 400;
const ENDPOINT = 'queue';

const taskList = z.object({
  items: z.array(z.looseObject({ metadata: z.looseObject({ name: z.string(), uid: z.string() }) })),
});

const finished = (obj: TestObject | undefined) =>
  ['Complete', 'Failed'].some((type) => condition(obj, type)?.status === 'True');

/**
 * Tasks are submitted while the operator is SIGKILLed at random instants, its cloud answers slowed so that
 * kills land between a submit and the id it records. Every task must finish, and the cloud must hold
 * exactly one task per resource, under the id derived from its uid: a task run twice is a duplicate.
 */
export async function taskCrashes(run: RunContext): Promise<ScenarioResult> {
  const startedAt = Date.now();
  const shape = run.profile.tasks;
  const random = run.random.fork('tasks');
  const trial = await Trial.open(run, { label: 'tasks', answerDelayMs: ANSWER_DELAY_MS });
  const { cluster } = run;
  const ns = trial.namespace;
  const create = (body: Record<string, unknown>, resource = resources.serverlessTask) =>
    persistently(`create ${String((body.metadata as { name: string }).name)}`, () =>
      cluster.client.request(z.unknown(), { method: 'POST', path: collectionPath(resource, ns), body }),
    );
  const violations: string[] = [];
  const notes: string[] = [];
  try {
    await trial.startOperators();
    await create(manifests.serverlessEndpoint(ENDPOINT, { workers: 2 }), resources.serverlessEndpoint);
    const endpoint = await cluster.waitFor(
      resources.serverlessEndpoint,
      ns,
      ENDPOINT,
      isReady(),
      'Ready',
      run.profile.convergeTimeoutMs,
    );
    const submitting = (async () => {
      for (let index = 0; index < shape.tasks; index++) {
        await sleep(random.between(0, (2 * shape.spreadMs) / shape.tasks));
        await create(manifests.serverlessTask(`task-${index}`, ENDPOINT, { input: { index } }));
      }
    })();
    const kills = await killRepeatedly(trial.replica, random.fork('kills'), shape.killAfterMs, submitting, 2);

    const settling = Date.now();
    const tasks = await persistently('list tasks', () =>
      cluster.client.request(taskList, { method: 'GET', path: collectionPath(resources.serverlessTask, ns) }),
    );
    let unfinished = 0;
    for (const { metadata } of tasks.items) {
      try {
        await cluster.waitFor(
          resources.serverlessTask,
          ns,
          metadata.name,
          finished,
          'finished',
          Math.max(1000, run.profile.convergeTimeoutMs - (Date.now() - settling)),
        );
      } catch (error) {
        unfinished += 1;
        notes.push(error instanceof Error ? error.message : String(error));
      }
    }
    const convergenceMs = Date.now() - settling;

    // The cloud's own record: every task on the endpoint, by id.
    const held = trial.sim.state
      .snapshot()
      .endpoints.find((candidate) => candidate.id === endpoint?.status?.id)
      ?.tasks.map((task) => task.taskId);
    const expected = new Set(tasks.items.map(({ metadata }) => metadata.uid.replaceAll('-', '')));
    const strangers = (held ?? []).filter((id) => !expected.has(id));
    const missing = [...expected].filter((id) => !held?.includes(id));
    const duplicates = (held?.length ?? 0) - new Set(held).size + strangers.length;
    if (tasks.items.length !== shape.tasks) violations.push(`${tasks.items.length} of ${shape.tasks} tasks made`);
    if (duplicates > 0) violations.push(`${duplicates} task(s) in the cloud beyond one per resource`);
    if (missing.length > 0) violations.push(`${missing.length} resource(s) with no task in the cloud`);
    if (unfinished > 0) violations.push(`${unfinished} task(s) never finished`);

    // Deleting the tasks makes no cloud call and leaves no finalizer behind.
    await Promise.all(
      tasks.items.map(({ metadata }) =>
        persistently(`delete ${metadata.name}`, () => cluster.delete(resources.serverlessTask, ns, metadata.name)),
      ),
    );
    let stuckFinalizers = 0;
    await poll(
      () =>
        cluster.client.request(taskList, { method: 'GET', path: collectionPath(resources.serverlessTask, ns) }),
      (list) => list.items.length === 0,
      'every task deleted',
      run.profile.convergeTimeoutMs,
    ).catch(() => {
      stuckFinalizers = 1;
    });
    if (stuckFinalizers > 0) violations.push('tasks still present after deletion (a stuck finalizer)');
    if (trial.crashes > 0) violations.push(`the operator crashed ${trial.crashes} time(s)`);
    const calls = trial.sim.calls.snapshot();
    return {
      scenario: 'task-crashes',
      ops: tasks.items.length * 2,
      kills: kills.kills,
      duplicates,
      leaks: 0,
      stuckFinalizers,
      convergenceMs: unfinished === 0 ? convergenceMs : null,
      apiCalls: calls.total,
      baselineApiCalls: null,
      figures: {
        tasks: tasks.items.length,
        killsWhileWorking: kills.whileWorking,
        submits: calls.byOperation['serverless.tasks.submit'] ?? 0,
        recoveredSubmits: countMessages(trial.logLines(), 'made by an interrupted create'),
        taskGets: calls.byOperation['serverless.tasks.get'] ?? 0,
        taskLists: calls.byOperation['serverless.tasks.list'] ?? 0,
        settleS: round(convergenceMs / 1000),
      },
      violations,
      missedTargets: [],
      notes,
      durationMs: Date.now() - startedAt,
    };
  } finally {
    await trial.close();
  }
}
