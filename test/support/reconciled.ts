// Negative checks ("nothing happened") wait until the operator has looked, counted, never for a sleep:
// reconciles a controller finished (its metric), or reconciles of one resource (the operator's debug line
// for each, which tests get: they run it at --log-level debug).
import { z } from 'zod';
import { until } from './until.ts';

/** An operator whose health server can be scraped, in this process or another. */
interface Scraped {
  fetchHealth(path: string): Promise<{ body: string }>;
}

/** An operator whose log lines this process holds. */
interface Logged {
  readonly logs: readonly string[];
}

/** Reconciles of controller `controller` (`gpupod`, `gpuvm`, ...) this operator process finished, whatever their result. */
export async function reconciles(operator: Scraped, controller = 'gpupod'): Promise<number> {
  const { body } = await operator.fetchHealth('/metrics');
  const prefix = `controller_runtime_reconcile_total{controller="${controller}"`;
  return body
    .split('\n')
    .filter((line) => line.startsWith(prefix))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

/** Waits until this operator process has finished `more` reconciles of the controller beyond `from`. */
export async function reconciled(
  operator: Scraped,
  from: number,
  more: number,
  controller = 'gpupod',
): Promise<void> {
  await until(async () => (await reconciles(operator, controller)) >= from + more, `${more} more reconciles`);
}

const finishedLine = z.object({
  msg: z.literal('reconcile finished'),
  controller: z.string(),
  namespace: z.string(),
  name: z.string(),
  result: z.enum(['success', 'error', 'requeue', 'requeue_after']),
  terminal: z.boolean(),
});

/** What one reconcile of a resource came to: its result as the metric counts it, and whether terminal. */
export type Turn = Pick<z.output<typeof finishedLine>, 'result' | 'terminal'>;

/** One resource of one kind's controller: `{ controller: 'serverlesstask', namespace, name }`. */
export interface ResourceKey {
  readonly controller: string;
  readonly namespace: string;
  readonly name: string;
}

/** The reconciles of the resource this operator process finished, in order. */
export function turnsOf(operator: Logged, key: ResourceKey): Turn[] {
  const turns: Turn[] = [];
  for (const text of operator.logs) {
    if (!text.includes('"reconcile finished"')) continue;
    const line = finishedLine.safeParse(JSON.parse(text));
    if (!line.success) continue;
    const { controller, namespace, name, result, terminal } = line.data;
    if (controller === key.controller && namespace === key.namespace && name === key.name)
      turns.push({ result, terminal });
  }
  return turns;
}

/**
 * Waits until the resource has had `more` reconciles beyond the first `from`, and answers those after
 * `from`.
 */
export async function turned(
  operator: Logged,
  key: ResourceKey,
  from: number,
  more: number,
): Promise<Turn[]> {
  const what = `${more} more reconciles of ${key.controller} ${key.namespace}/${key.name}`;
  await until(() => turnsOf(operator, key).length >= from + more, what);
  return turnsOf(operator, key).slice(from);
}

/**
 * Waits for a reconcile of the resource that began after this call, and answers the resource's reconciles
 * since the call. Twice, `touch` changes the resource (an annotation), so that one more reconcile comes,
 * and one more ends: the first may have been under way at the call, but the second began after it ended
 * (one resource is never reconciled twice at once).
 */
export async function reconciledAfter(
  operator: Logged,
  key: ResourceKey,
  touch: () => Promise<unknown>,
): Promise<Turn[]> {
  const from = turnsOf(operator, key).length;
  for (let round = 0; round < 2; round++) {
    const before = turnsOf(operator, key).length;
    await touch();
    await turned(operator, key, before, 1);
  }
  return turnsOf(operator, key).slice(from);
}
