import type { AccountLink } from '../accounts/account-links.ts';
import type { CommonSpec } from '../core/external-kind.ts';
import { type CloudView, fingerprintDigest } from '../core/observed.ts';
import type { ManagedStatus } from '../core/status-schema.ts';

/**
 * The freshest view of `id` the cache can give without a call, or one get when it cannot. With the
 * holder's `status`, written from the same watched fields the list shows now, the list's view is enough:
 * the status already holds what only a get would add, so a restart costs lists, not a get per resource.
 */
export async function viewOf<Spec extends CommonSpec, Cloud>(
  id: string,
  link: AccountLink<Spec, Cloud>,
  status?: ManagedStatus,
): Promise<CloudView<Cloud> | undefined> {
  const { adapter, cache } = link;
  // Until the first list is in, every observation would cost a get: wait for it instead.
  if (!cache.hasSynced()) await cache.waitForListAfter(1);
  const sighting = cache.sight(id, link.actedAt.get(id) ?? 0);
  if (sighting.kind === 'seen') {
    const listed = sighting.cloud;
    if (status?.id === id && status.cloudFingerprint === fingerprintDigest(adapter.fingerprint(listed))) {
      return { cloud: listed, partial: adapter.enrich !== undefined };
    }
    return { cloud: await cache.complete(listed), partial: false };
  }
  const cloud = await adapter.get(id);
  if (!cloud) return undefined;
  cache.remember(cloud);
  return { cloud: await cache.complete(cloud), partial: false };
}

/** The cloud object `id`, as `viewOf` finds it; undefined when the cloud has none. */
export async function cloudObjectOf<Spec extends CommonSpec, Cloud>(
  id: string,
  link: AccountLink<Spec, Cloud>,
): Promise<Cloud | undefined> {
  return (await viewOf(id, link))?.cloud;
}

/** Whether the cloud has object `id` and it is not gone (deleted, terminated). */
export async function isLive<Spec extends CommonSpec, Cloud>(
  id: string,
  link: AccountLink<Spec, Cloud>,
): Promise<boolean> {
  const cloud = await cloudObjectOf(id, link);
  return cloud !== undefined && !link.adapter.isGone(cloud);
}

/** Drops what the account's link remembers of cloud object `id`, once no resource holds it. */
export function forgetCloud<Spec extends CommonSpec, Cloud>(
  id: string,
  link: AccountLink<Spec, Cloud>,
): void {
  link.actedAt.delete(id);
  link.cache.forget(id);
}
