import type { Capacity } from './capacity.ts';
import type { SimClock } from './clock.ts';
import type { Courier } from './delivery.ts';
import type { Faults } from './faults.ts';
import type { IdSequence } from './ids.ts';
import type { Steps } from './lifecycle.ts';
import type { Market } from './market.ts';
import type { Scheduler } from './scheduler.ts';

/** The machinery every kind of resource shares. */
export interface SimContext {
  readonly clock: SimClock;
  readonly scheduler: Scheduler;
  readonly steps: Steps;
  readonly ids: IdSequence;
  readonly capacity: Capacity;
  /** Today's prices. */
  readonly market: Market;
  readonly faults: Faults;
  readonly courier: Courier;
  /** How long a terminated pod or VM stays visible before it reads as not found. */
  readonly retentionMs: number;
}
