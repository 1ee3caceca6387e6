// Negative checks ("nothing happened") wait until the operator has looked, counted, never for a sleep:
// reconciles a controller finished (its metric).
import { until } from './until.ts';

/** An operator whose health server can be scraped, in this process or another. */
interface Scraped {
  fetchHealth(path: string): Promise<{ body: string }>;
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
