// Authorisation as Kubernetes does it for an extension server or a kubelet: one SubjectAccessReview per
// request (the operator's ServiceAccount may create them through `system:auth-delegator`), for the user
// the apiserver named. A decision is kept a few seconds at most, so a revoked grant stops working at once.
import { z } from 'zod';
import type { KubeRequests } from '../kube/client.ts';
import type { User } from './user.ts';

/**
 * What a request does, as RBAC names it: `get` on `gpupods/log` in the tenant group, in one namespace; or
 * `get` on `nodes/proxy` in the core group (`''`), as the virtual nodes' kubelet API asks.
 */
export interface RequestAttributes {
  readonly verb: 'get' | 'create' | 'update' | 'patch' | 'delete';
  readonly group: string;
  /** `''` for a cluster-scoped resource. */
  readonly namespace: string;
  readonly resource: string;
  readonly subresource: string;
  readonly name: string;
}

export interface Decision {
  readonly allowed: boolean;
  /** The authoriser's reason, when it gave one. */
  readonly reason: string;
}

export interface Authorizer {
  authorize(user: User, attributes: RequestAttributes): Promise<Decision>;
}

const review = z.object({
  status: z.object({
    allowed: z.boolean(),
    reason: z.string().optional(),
    evaluationError: z.string().optional(),
  }),
});

/** Decisions are kept this long at most (docs/security.md): a revoked grant ends within seconds. */
export const DECISION_TTL_MS = { allowed: 5_000, denied: 2_000 } as const;

export interface SubjectAccessReviewerOptions {
  /** How long an allowed decision is reused. */
  readonly allowedTtlMs: number;
  /** How long a denied one is. */
  readonly deniedTtlMs: number;
  readonly now?: () => number;
}

export class SubjectAccessReviewer implements Authorizer {
  readonly #kube: KubeRequests;
  readonly #options: SubjectAccessReviewerOptions;
  readonly #cache = new Map<string, { decision: Decision; until: number }>();

  constructor(kube: KubeRequests, options: SubjectAccessReviewerOptions) {
    this.#kube = kube;
    this.#options = options;
  }

  async authorize(user: User, attributes: RequestAttributes): Promise<Decision> {
    const now = this.#options.now ?? Date.now;
    const key = JSON.stringify([user, attributes]);
    const cached = this.#cache.get(key);
    if (cached && cached.until > now()) return cached.decision;
    const { status } = await this.#kube.request(review, {
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: user.name,
          groups: user.groups,
          extra: user.extra,
          resourceAttributes: attributes,
        },
      },
    });
    const decision = { allowed: status.allowed, reason: status.reason ?? status.evaluationError ?? '' };
    this.#forgetExpired(now());
    this.#cache.set(key, {
      decision,
      until: now() + (decision.allowed ? this.#options.allowedTtlMs : this.#options.deniedTtlMs),
    });
    return decision;
  }

  #forgetExpired(now: number): void {
    for (const [key, entry] of this.#cache) if (entry.until <= now) this.#cache.delete(key);
  }
}

/** The message the apiserver itself gives for a refusal, so kubectl users read what they know. */
export function forbiddenMessage(user: User, attributes: RequestAttributes): string {
  const { verb, group, resource, subresource, name, namespace } = attributes;
  const qualified = group === '' ? resource : `${resource}.${group}`;
  return `${qualified} "${name}" is forbidden: User "${user.name}" cannot ${verb} resource "${resource}/${subresource}" in API group "${group}" in the namespace "${namespace}"`;
}
