import { beforeStep, type ExternalKind, type Plan } from './external-kind.ts';

/** A cloud change refused because this process can no longer be sure it is the one to make it. */
export class NotLeaderError extends Error {
  override readonly name = 'NotLeaderError';
  constructor(kind: string, where = 'in the cloud') {
    super(`not changing any ${kind} ${where}: the leader lease is no longer certainly this process's`);
  }
}

/**
 * The adapter with every cloud change (create, plan step, delete) behind a synchronous check, made
 * right before the call. A leader frozen past its renew deadline (a stopped VM, a long pause) resumes
 * with reconciles in flight whose next awaited answer can come before its renew loop runs; by then a
 * successor may be acting on the same resources, and one more create would be a duplicate.
 */
export function fencedAdapter<Spec, Cloud>(
  adapter: ExternalKind<Spec, Cloud>,
  mayAct: () => boolean,
): ExternalKind<Spec, Cloud> {
  const fence = () => {
    if (!mayAct()) throw new NotLeaderError(adapter.kind);
  };
  const remove = adapter.delete;
  return {
    ...adapter,
    create: (mr, ctx) => {
      fence();
      return adapter.create(mr, ctx);
    },
    ...(remove && {
      delete: (id: string) => {
        fence();
        return remove(id);
      },
    }),
    plan: async (mr, cloud, ctx): Promise<Plan> => beforeStep(await adapter.plan(mr, cloud, ctx), fence),
  };
}
