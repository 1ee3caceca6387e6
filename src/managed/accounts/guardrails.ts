import type { Clock } from '../../lib/clock.ts';
import type { Demand } from '../core/demand.ts';
import { ReconcileError } from '../core/errors.ts';
import { type ExternalKind, type MeteringSupport, meteringOf, type Plan } from '../core/external-kind.ts';
import { type Account, type BudgetLimit, budgetScope } from './accounts.ts';

/** What the guardrails need of the kind's cloud cache: whether it counts an object, or a list since. */
export interface CountedBy {
  has(id: string): boolean;
  /** Whether a resource holds `id` yet: until then a namespace's budget cannot count the object. */
  claimed(id: string): boolean;
  listedSince(at: number): boolean;
  requestRefresh(): void;
}

/**
 * The adapter with the account's policy in front of every create and every step that adds GPUs, as the
 * fence is in front of every cloud change: a refused call is never sent. A limit of the resource itself
 * (GPU type or count, an id not on an allow-list) is terminal; the account's total is not, since GPUs
 * freed elsewhere make room.
 *
 * Budgets in dollars per hour stand on the same mechanism: what a change adds (a create its price, a
 * resume or scale-up what it costs beyond what the object costs now) against each covering budget's
 * spend, prices read only when a budget covers the resource.
 *
 * The total is the account's one reservation: a check and the reservation of what it allows are made in the same
 * synchronous turn, and the reservation stays until the kind's cache counts the object (a create's answer is
 * remembered at once; a step's effect shows in the next list), so concurrent reconciles never each pass
 * a check that only one of them fits.
 */
export function guardedAdapter<Spec, Cloud>(
  adapter: ExternalKind<Spec, Cloud>,
  account: Account,
  cache: CountedBy,
  clock: Clock,
): ExternalKind<Spec, Cloud> {
  const metering = meteringOf(adapter);
  return {
    ...adapter,
    create: async (mr, ctx) => {
      const demand = await metering.demand(mr);
      const namespace = namespaceOf(mr);
      // The cloud runs what it creates: no create request carries paused or stopped.
      const perHour = budgeted(account, namespace) ? await demand.perHour?.() : 0;
      const adds = { gpus: demand.gpus?.count ?? 0, perHour, namespace };
      const reserved = check(account, demand, adds);
      let id: string | undefined;
      let endedAt: number | undefined;
      // Held until the cache counts the object and a resource holds it (so a namespace's budget counts
      // it too), or until it is gone: counted once and no longer, or not in a list made after the create
      // ended (an abandoned create deleted it; a create that failed may still have landed, a timeout).
      let seen = false;
      const listedAfter = () => endedAt !== undefined && cache.listedSince(endedAt);
      account.usage.reserve(
        reserved,
        () => {
          if (id === undefined || !cache.has(id)) return seen || listedAfter();
          seen = true;
          return cache.claimed(id);
        },
        () => id !== undefined && cache.has(id),
      );
      try {
        const cloud = await adapter.create(mr, ctx);
        id = adapter.idOf(cloud);
        return cloud;
      } finally {
        // A create that failed may still have landed (a timeout): reserved until a later list shows.
        endedAt = clock.now();
      }
    },
    plan: async (mr, cloud, ctx): Promise<Plan> => {
      const plan = await adapter.plan(mr, cloud, ctx);
      if (plan.kind !== 'act') return plan;
      const demand = await metering.demand(mr);
      const gpus = (demand.live ? (demand.gpus?.count ?? 0) : 0) - metering.heldGpus(cloud);
      if (gpus <= 0) return plan;
      const namespace = namespaceOf(mr);
      const adds = { gpus, perHour: await stepPrice(account, namespace, demand, metering, cloud), namespace };
      const { step } = plan;
      return {
        kind: 'act',
        step: {
          ...step,
          run: async () => {
            const reserved = check(account, demand, adds);
            let endedAt: number | undefined;
            account.usage.reserve(reserved, () => endedAt !== undefined && cache.listedSince(endedAt));
            try {
              await step.run();
            } finally {
              endedAt = clock.now();
              cache.requestRefresh();
            }
          },
        },
      };
    },
  };
}

function namespaceOf(mr: { metadata: { namespace?: string | undefined } }): string {
  return mr.metadata.namespace ?? '';
}

/** Whether a budget covers resources of `namespace`: only then are prices read. */
function budgeted(account: Account, namespace: string): boolean {
  return (account.policy.budgets ?? []).some((budget) => budget.covers(namespace));
}

/** What a step adds per hour: the spec's price less what the object costs now (a scale-up's difference). */
async function stepPrice<Spec, Cloud>(
  account: Account,
  namespace: string,
  demand: Demand,
  metering: MeteringSupport<Spec, Cloud>,
  cloud: Cloud,
): Promise<number | undefined> {
  if (!budgeted(account, namespace)) return 0;
  const wanted = await demand.perHour?.();
  const now = metering.heldGpus(cloud) > 0 ? await metering.priceOf(cloud) : 0;
  return wanted === undefined || now === undefined ? undefined : Math.max(0, wanted - now);
}

/** How soon a change the account's limits refused is looked at again: room frees as others stop. */
const LIMIT_RECHECK_MS = 10_000;
/** How soon a change that waited for the account's lists or prices is looked at again. */
const COUNTING_RECHECK_MS = 2_000;

/** What a create or step adds to the account: GPUs, and dollars per hour when the cloud quotes a price. */
interface Adds {
  readonly gpus: number;
  readonly perHour: number | undefined;
  readonly namespace: string;
}

/** Refuses what the account's policy does not allow; answers what to reserve for what it does. */
function check(
  account: Account,
  demand: Demand,
  adds: Adds,
): { gpus: number; perHour: number; namespace: string } {
  const { policy } = account;
  const refuse = (reason: string, message: string, terminal = true): never => {
    // The account's totals free up on their own: looked at again steadily, never with growing backoff.
    const retryAfterMs = terminal
      ? undefined
      : reason === 'UsageNotCounted'
        ? COUNTING_RECHECK_MS
        : LIMIT_RECHECK_MS;
    throw new ReconcileError(reason, `provider config ${account.name}: ${message}`, {
      terminal,
      retryAfterMs,
    });
  };
  const registryAuth = demand.containerRegistryAuthId;
  if (registryAuth !== undefined && policy.registryAuthIds && !policy.registryAuthIds.has(registryAuth)) {
    refuse('NotAllowedByProviderConfig', `containerRegistryAuthId ${registryAuth} is not on its allow-list`);
  }
  const credential = demand.credentialId;
  if (credential !== undefined && policy.credentialIds && !policy.credentialIds.has(credential)) {
    refuse('NotAllowedByProviderConfig', `credentialId ${credential} is not on its allow-list`);
  }
  const reserved = { gpus: adds.gpus, perHour: adds.perHour ?? 0, namespace: adds.namespace };
  const gpus = demand.gpus;
  if (gpus === undefined) return reserved;
  const allowed = policy.gpuTypes;
  const forbidden = allowed && gpus.types.find((type) => !allowed.has(type));
  if (forbidden !== undefined) refuse('GuardrailExceeded', `GPU type ${forbidden} is not allowed`);
  const perResource = policy.maxGpusPerResource;
  if (perResource !== undefined && gpus.count > perResource) {
    refuse('GuardrailExceeded', `${gpus.count} GPUs exceed its limit of ${perResource} per resource`);
  }
  if (adds.gpus <= 0) return reserved;
  const budgets = (policy.budgets ?? []).filter((budget) => budget.covers(adds.namespace));
  const limit = policy.maxLiveGpus;
  if (limit === undefined && budgets.length === 0) return reserved;
  if (!account.usage.counted()) {
    refuse('UsageNotCounted', 'its objects of every kind are not listed yet; retried shortly', false);
  }
  if (limit !== undefined) {
    const live = account.usage.total();
    if (live + adds.gpus > limit) {
      refuse(
        'GuardrailExceeded',
        `${adds.gpus} more GPUs would make ${live + adds.gpus} live, over its limit of ${limit}; retried as GPUs free up`,
        false,
      );
    }
  }
  for (const budget of budgets) checkBudget(account, budget, adds, refuse);
  return reserved;
}

function checkBudget(
  account: Account,
  budget: BudgetLimit,
  adds: Adds,
  refuse: (reason: string, message: string, terminal?: boolean) => never,
): void {
  const name = `budget ${budget.name}`;
  if (adds.perHour === undefined) {
    refuse(
      'BudgetExceeded',
      `${name}: the cloud quotes no price for it today, so it cannot be allowed`,
      false,
    );
  }
  const scope = budgetScope(budget);
  const spend = account.usage.spendPerHour(scope);
  if (spend === undefined) {
    refuse(
      'UsageNotCounted',
      `${name}: the prices of its live objects are being read; retried shortly`,
      false,
    );
  }
  const limit = budget.limit();
  if (spend + adds.perHour > limit.perHour + 1e-9) {
    refuse(
      'BudgetExceeded',
      `${name}: $${dollars(adds.perHour)}/h more would make $${dollars(spend + adds.perHour)}/h, over its ${limit.by} of $${dollars(limit.perHour)}/h; retried as spend frees up`,
      false,
    );
  }
}

function dollars(amount: number): string {
  return amount.toFixed(amount >= 100 ? 0 : 2);
}
