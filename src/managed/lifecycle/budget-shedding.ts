import type { Clock } from '../../lib/clock.ts';
import type { AccountLink } from '../accounts/account-links.ts';
import { budgetScope, type SpendScope } from '../accounts/accounts.ts';
import { type CommonSpec, type ManagedObject, meteringOf } from '../core/external-kind.ts';
import type { ManagedStore } from '../core/store.ts';

export interface BudgetSheddingOptions<Spec> {
  store: ManagedStore;
  parseSpec(raw: unknown): Spec;
  clock: Clock;
}

/** How often a pod a budget may pause looks at the budget again: reads of caches only, no call. */
const BUDGET_RECHECK_MS = 30_000;

/** How long a pause for a budget counts as done before a list shows it: a stuck pause is not counted forever. */
const SHED_HOLD_MS = 120_000;

/**
 * A budget with `onExceeded: PausePods` that its covered objects cost more than: it pauses, through the
 * operator's pause, just enough of the pods that allow it to come back within the limit — the idlest
 * first (lowest GPU utilisation as their status last reported it), then the dearest. Every reconcile of a
 * candidate works out the same choice from the same caches; each pause it takes is counted at once as
 * spend shed (a negative reservation), so the next one sees what is left to shed and no more is paused.
 */
export class BudgetShedding<Spec extends CommonSpec, Cloud> {
  readonly #o: BudgetSheddingOptions<Spec>;

  constructor(options: BudgetSheddingOptions<Spec>) {
    this.#o = options;
  }

  /** Whether `mr` is one of the pods to pause for a budget now; why, when it is. */
  async decide(
    mr: ManagedObject<Spec>,
    cloud: Cloud,
    link: AccountLink<Spec, Cloud>,
  ): Promise<string | undefined> {
    const { adapter, account } = link;
    const metering = meteringOf(adapter);
    const shedding = adapter.pause?.shedding;
    if (!shedding?.allowed(mr.spec) || metering.heldGpus(cloud) === 0) return undefined;
    const namespace = mr.metadata.namespace;
    const ownId = adapter.idOf(cloud);
    for (const budget of account.policy.budgets ?? []) {
      if (!budget.pausesPods || !budget.covers(namespace)) continue;
      const scope = budgetScope(budget);
      const spend = account.usage.spendPerHour(scope);
      const limit = budget.limit();
      if (spend === undefined || spend <= limit.perHour) continue;
      const chosen = await this.#choose(link, scope, spend - limit.perHour);
      const mine = chosen.find((candidate) => candidate.id === ownId);
      if (!mine) continue;
      // Counted as shed at once, until the cache shows it no longer holding GPUs.
      const since = this.#o.clock.now();
      account.usage.reserve({ gpus: -metering.heldGpus(cloud), perHour: -mine.perHour, namespace }, () => {
        const seen = link.cache.objects().find((each) => adapter.idOf(each) === ownId);
        return (
          seen === undefined || metering.heldGpus(seen) === 0 || this.#o.clock.now() - since > SHED_HOLD_MS
        );
      });
      return `budget ${budget.name}: what it covers costs $${spend.toFixed(2)}/h, over its ${limit.by} of $${limit.perHour.toFixed(2)}/h; pausing the idlest pods that allow it (spec.pauseOnBudget) until it is within`;
    }
    return undefined;
  }

  /**
   * Whether running `mr` again would take a budget that pauses pods over its limit: why, when it would.
   * Asked of a pod paused for a budget whose user lifts the pause.
   */
  async stillOver(mr: ManagedObject<Spec>, link: AccountLink<Spec, Cloud>): Promise<string | undefined> {
    const { adapter, account } = link;
    const namespace = mr.metadata.namespace;
    const own = await (await meteringOf(adapter).demand(mr)).perHour?.();
    for (const budget of account.policy.budgets ?? []) {
      if (!budget.pausesPods || !budget.covers(namespace)) continue;
      const spend = account.usage.spendPerHour(budgetScope(budget));
      const limit = budget.limit();
      // Not known is not within: a pod the budget paused stays paused until the spend is known.
      if (spend === undefined || spend + (own ?? 0) > limit.perHour) {
        const costs =
          spend === undefined ? 'is not priced yet' : `would cost $${(spend + (own ?? 0)).toFixed(2)}/h`;
        return `budget ${budget.name}: what it covers ${costs} with this pod running, over its ${limit.by} of $${limit.perHour.toFixed(2)}/h`;
      }
    }
    return undefined;
  }

  /** How soon to look again at a resource that a budget may pause: only pods that allow it, under such a budget. */
  watches(mr: ManagedObject<Spec>, link: AccountLink<Spec, Cloud>): number | undefined {
    if (!link.adapter.pause?.shedding?.allowed(mr.spec)) return undefined;
    const namespace = mr.metadata.namespace;
    const watched = link.account.policy.budgets?.some(
      (budget) => budget.pausesPods && budget.covers(namespace),
    );
    return watched ? BUDGET_RECHECK_MS : undefined;
  }

  /** The pods to pause, idlest first, until their prices cover `excess`. */
  async #choose(
    link: AccountLink<Spec, Cloud>,
    scope: SpendScope,
    excess: number,
  ): Promise<Array<{ id: string; perHour: number }>> {
    const { adapter } = link;
    const metering = meteringOf(adapter);
    const shedding = adapter.pause?.shedding;
    if (!shedding) return [];
    const candidates: Array<{ id: string; perHour: number; idleness: number }> = [];
    for (const cloud of link.cache.objects()) {
      if (metering.heldGpus(cloud) === 0) continue;
      const id = adapter.idOf(cloud);
      const [claim] = this.#o.store.claimsOn(id);
      const holder = claim && this.#o.store.get(claim.key);
      if (!holder || !scope(holder.metadata.namespace) || holder.status?.pausedBy) continue;
      if (!shedding.allowed(this.#specOf(holder))) continue;
      const perHour = await metering.priceOf(cloud);
      if (perHour === undefined || perHour <= 0) continue;
      candidates.push({ id, perHour, idleness: shedding.utilization(holder) ?? 0 });
    }
    candidates.sort((a, b) => a.idleness - b.idleness || b.perHour - a.perHour || a.id.localeCompare(b.id));
    const chosen: Array<{ id: string; perHour: number }> = [];
    let shed = 0;
    for (const candidate of candidates) {
      if (shed >= excess) break;
      chosen.push(candidate);
      shed += candidate.perHour;
    }
    return chosen;
  }

  /** A holder's spec, or undefined when it does not parse (it is then no candidate). */
  #specOf(holder: ManagedObject<unknown>): Spec | undefined {
    try {
      return this.#o.parseSpec(holder.spec);
    } catch {
      return undefined;
    }
  }
}
