import type { Account } from './accounts.ts';
import type { Demand } from './demand.ts';
import { ReconcileError } from './errors.ts';
import { beforeStep, type ExternalKind, type Plan } from './external-kind.ts';

/**
 * The adapter with the account's policy in front of every create and every step that adds live GPUs, as
 * the fence is in front of every cloud change: a refused call is never sent. A limit of the resource
 * itself (GPU type or count, an id not on an allow-list) is terminal; the account's live total is not,
 * since GPUs freed elsewhere make room.
 */
export function guardedAdapter<Spec, Cloud>(
  adapter: ExternalKind<Spec, Cloud>,
  account: Account,
): ExternalKind<Spec, Cloud> {
  return {
    ...adapter,
    create: async (mr, ctx) => {
      const demand = await adapter.demand(mr);
      check(account, demand, demand.live ? (demand.gpus?.count ?? 0) : 0);
      return adapter.create(mr, ctx);
    },
    plan: async (mr, cloud, ctx): Promise<Plan> => {
      const plan = await adapter.plan(mr, cloud, ctx);
      if (plan.kind !== 'act') return plan;
      const demand = await adapter.demand(mr);
      const adding = (demand.live ? (demand.gpus?.count ?? 0) : 0) - adapter.heldGpus(cloud);
      return adding > 0 ? beforeStep(plan, () => check(account, demand, adding)) : plan;
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
  if (limit !== undefined && adding > 0) {
    const live = account.usage.total();
    if (live + adding > limit) {
      refuse(
        'GuardrailExceeded',
        `${adding} more GPUs would make ${live + adding} live, over its limit of ${limit}; retried as GPUs free up`,
        false,
      );
    }
  }
}
