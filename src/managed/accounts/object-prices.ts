import type { Logger } from '../../lib/logger.ts';
import type { ExternalKind, MeteringSupport } from '../core/external-kind.ts';

type Priceable<Cloud> = Pick<ExternalKind<unknown, Cloud>, 'kind' | 'idOf' | 'fingerprint'> &
  Pick<MeteringSupport<unknown, Cloud>, 'heldGpus' | 'priceOf'>;

/**
 * What one kind's objects in one account cost per hour, summed in one synchronous turn so that a budget's
 * check and the reservation it allows stay one step (as the live-GPU count does). A price is read once per
 * state of an object (its fingerprint), in the background: until every object that holds GPUs has one, the
 * sum is unknown, and a budget refuses for now rather than guess.
 */
export class ObjectPrices<Cloud> {
  readonly #adapter: Priceable<Cloud>;
  readonly #log: Logger;
  readonly #known = new Map<string, { state: string; perHour: number }>();
  readonly #reading = new Set<string>();

  constructor(adapter: Priceable<Cloud>, log: Logger) {
    this.#adapter = adapter;
    this.#log = log;
  }

  /** Dollars per hour of `objects` that hold GPUs and that `include` keeps; undefined until all are priced. */
  total(objects: readonly Cloud[], include: (id: string) => boolean): number | undefined {
    const adapter = this.#adapter;
    const live = new Set<string>();
    let sum = 0;
    let complete = true;
    for (const cloud of objects) {
      if (adapter.heldGpus(cloud) === 0) continue;
      const id = adapter.idOf(cloud);
      live.add(id);
      if (!include(id)) continue;
      const state = adapter.fingerprint(cloud);
      const known = this.#known.get(id);
      if (known?.state === state) {
        sum += known.perHour;
        continue;
      }
      complete = false;
      void this.#read(id, cloud, state);
    }
    for (const id of this.#known.keys()) if (!live.has(id)) this.#known.delete(id);
    return complete ? sum : undefined;
  }

  async #read(id: string, cloud: Cloud, state: string): Promise<void> {
    if (this.#reading.has(id)) return;
    this.#reading.add(id);
    try {
      const perHour = await this.#adapter.priceOf(cloud);
      if (perHour === undefined) {
        // Nothing prices it (a GPU type no longer offered): counted at 0, so budgets are a lower bound.
        this.#log.warn({ kind: this.#adapter.kind, id }, 'no price for a live object; budgets count it at 0');
      }
      this.#known.set(id, { state, perHour: perHour ?? 0 });
    } catch (error) {
      this.#log.warn(
        { kind: this.#adapter.kind, id, err: error },
        'reading a price failed; read again on the next check',
      );
    } finally {
      this.#reading.delete(id);
    }
  }
}
