// Applying custom resources and timing each from the moment the apiserver confirmed its creation.
import type { Manifest } from '../manifests.ts';
import { forEachConcurrently, forEachPaced } from '../parallel.ts';
import { createResource, type Session } from '../session.ts';

export interface Applied {
  /** When the first create was sent. */
  began: number;
  /** When the last create was answered. */
  ended: number;
  /** Per name: when the apiserver answered the create (the resource exists from then on). */
  createdAt: Map<string, number>;
}

type Work = (manifest: Manifest) => Promise<void>;

/** Creates every manifest with the session's concurrency, as fast as the apiserver takes them. */
export function applyBurst(session: Session, namespace: string, manifests: readonly Manifest[]) {
  const { concurrency } = session.options;
  return apply(session, namespace, (work) => forEachConcurrently(manifests, concurrency, work));
}

/** Creates the manifests one by one at `perSecond`, so nothing queues anywhere. */
export function applyPaced(
  session: Session,
  namespace: string,
  manifests: readonly Manifest[],
  perSecond: number,
) {
  return apply(session, namespace, (work) => forEachPaced(manifests, perSecond, work));
}

async function apply(
  session: Session,
  namespace: string,
  run: (work: Work) => Promise<void>,
): Promise<Applied> {
  const createdAt = new Map<string, number>();
  const began = Date.now();
  await run(async (manifest) => {
    await createResource(session.stack.kube, namespace, manifest);
    createdAt.set(manifest.name, Date.now());
  });
  return { began, ended: Date.now(), createdAt };
}
