// Authentication as a kubelet does it with `--authentication-token-webhook`: a request without a client
// certificate may carry a bearer token, which a TokenReview through the apiserver names the user of. This
// is how metrics-server (and Prometheus) call kubelets: with their ServiceAccount's token. A token is kept
// only as its hash, and a user it names for a short while, so a revoked token stops working soon.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import type { KubeRequests } from '../../kube/client.ts';
import type { User } from '../../serving/user.ts';

const tokenReview = z.object({
  status: z.object({
    authenticated: z.boolean().optional(),
    user: z
      .object({
        username: z.string().optional(),
        groups: z.array(z.string()).optional(),
        extra: z.record(z.string(), z.array(z.string())).optional(),
      })
      .optional(),
  }),
});

/** How long a token's user is kept. */
export const TOKEN_TTL_MS = 10_000;
/** How long a refused token is kept refused: a caller repeating one costs one review per period. */
export const REFUSED_TTL_MS = 2_000;
/** The most tokens kept at once: a caller sending many tokens cannot grow the cache past it. */
const MAX_KEPT = 1_000;

export type TokenAuthentication = { user: User } | { refused: string } | undefined;
const REFUSED = { refused: 'the bearer token is not valid' } as const;

export interface TokenAuthenticator {
  /** The user the request's bearer token names, a refusal, or undefined when it carries no token. */
  authenticate(request: IncomingMessage): Promise<TokenAuthentication>;
}

export class TokenReviewer implements TokenAuthenticator {
  readonly #kube: KubeRequests;
  readonly #now: () => number;
  readonly #kept = new Map<string, { user: User | undefined; until: number }>();

  constructor(kube: KubeRequests, now: () => number = Date.now) {
    this.#kube = kube;
    this.#now = now;
  }

  async authenticate(request: IncomingMessage): Promise<TokenAuthentication> {
    const header = request.headers.authorization;
    if (header === undefined) return undefined;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) return { refused: 'the Authorization header is not a bearer token' };
    const token = match[1];
    const hash = createHash('sha256').update(token).digest('hex');
    const kept = this.#kept.get(hash);
    if (kept && kept.until > this.#now()) return kept.user ? { user: kept.user } : REFUSED;
    const { status } = await this.#kube.request(tokenReview, {
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    });
    const name = status.user?.username;
    if (!status.authenticated || !name) {
      this.#keep(hash, undefined, REFUSED_TTL_MS);
      return REFUSED;
    }
    const user: User = { name, groups: status.user?.groups ?? [], extra: status.user?.extra ?? {} };
    this.#keep(hash, user, TOKEN_TTL_MS);
    return { user };
  }

  #keep(hash: string, user: User | undefined, ttlMs: number): void {
    const now = this.#now();
    for (const [key, entry] of this.#kept) if (entry.until <= now) this.#kept.delete(key);
    // Still full of live ones: the oldest goes (a Map iterates in insertion order).
    if (this.#kept.size >= MAX_KEPT) this.#kept.delete(this.#kept.keys().next().value ?? '');
    this.#kept.set(hash, { user, until: now + ttlMs });
  }
}
