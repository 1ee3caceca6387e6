import type { Clock } from '../lib/clock.ts';
import type { Account } from './accounts.ts';
import type { Demand } from './demand.ts';
import { ReconcileError } from './errors.ts';
import type { ExternalKind, Plan } from './external-kind.ts';

/** What the guardrails need of the kind's cloud cache: whether it counts an object, or a list since. */
export interface CountedBy {
  has(id: string): boolean;
  listedSince(at: number): boolean;
  requestRefresh(): void;
}

/**
 * The adapter with the account's policy in front of every create and every step that adds GPUs, as the
 * fence is in front of every cloud change: a refused call is never sent. A limit of the resource itself
 * (GPU type or count, an id not on an allow-list) is terminal; the account's total is not, since GPUs
 * freed elsewhere make room.
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
  return {
    ...adapter,
    create: async (mr, ctx) => {
      const demand = await adapter.demand(mr);
      // The cloud runs what it creates: no create request carries paused or stopped.
      const adding = demand.gpus?.count ?? 0;
      check(account, demand, adding);
      let id: string | undefined;
      let endedAt: number | undefined;
      account.usage.reserve(adding, () =>
        id !== undefined ? cache.has(id) : endedAt !== undefined && cache.listedSince(endedAt),
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
      const demand = await adapter.demand(mr);
      const adding = (demand.live ? (demand.gpus?.count ?? 0) : 0) - adapter.heldGpus(cloud);
      if (adding <= 0) return plan;
      const { step } = plan;
      return {
        kind: 'act',
        step: {
          ...step,
          run: async () => {
            check(account, demand, adding);
            let endedAt: number | undefined;
            account.usage.reserve(adding, () => endedAt !== undefined && cache.listedSince(endedAt));
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

function check(account: Account, demand: Demand, adding: number): void {
  const { policy } = account;
  const refuse = (reason: string, message: string, terminal = true): never => {
    throw new ReconcileError(reason, `provider config ${account.name}: ${message}`, { terminal });
  };
  const registryAuth = demand.containerRegistryAuthId;
  if (registryAuth !== undefined && policy.registryAuthIds && !policy.registryAuthIds.has(registryAuth)) {
    refuse('NotAllowedByProviderConfig', `containerRegistryAuthId ${registryAuth} is not on its allow-list`);
  }
  const credential = demand.credentialId;
  if (credential !== undefined && policy.credentialIds && !policy.credentialIds.has(credential)) {
    refuse('NotAllowedByProviderConfig', `credentialId ${credential} is not on its allow-list`);
  }
  const gpus = demand.gpus;
  if (gpus === undefined) return;
  const allowed = policy.gpuTypes;
  const forbidden = allowed && gpus.types.find((type) => !allowed.has(type));
  if (forbidden !== undefined) refuse('GuardrailExceeded', `GPU type ${forbidden} is not allowed`);
  const perResource = policy.maxGpusPerResource;
  if (perResource !== undefined && gpus.count > perResource) {
    refuse('GuardrailExceeded', `${gpus.count} GPUs exceed its limit of ${perResource} per resource`);
  }
  const limit = policy.maxLiveGpus;
  if (limit === undefined || adding <= 0) return;
  if (!account.usage.counted()) {
    refuse('UsageNotCounted', 'its objects of every kind are not listed yet; retried shortly', false);
  }
  const live = account.usage.total();
  if (live + adding > limit) {
    refuse(
      'GuardrailExceeded',
      `${adding} more GPUs would make ${live + adding} live, over its limit of ${limit}; retried as GPUs free up`,
      false,
    );
  }
}
