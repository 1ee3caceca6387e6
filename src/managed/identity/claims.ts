import type { Claim } from '../core/store.ts';

/** Whether a custom resource may manage a cloud object, and if not, why (as the user may be told). */
export type ClaimVerdict = { holds: true } | { holds: false; reason: string };

export interface ClaimQuestion {
  /** The asking resource's uid. */
  uid: string;
  /** The cloud id it names. */
  id: string;
  /** The id its status records, proved when the operator wrote it. */
  statusId: string | undefined;
  /** Every resource of the kind, in any namespace, that names `id` (the asker among them or not). */
  claims: readonly Claim[];
  /** The uid the cloud object's owner marker names, when the kind carries one and the object shows it. */
  marker: string | undefined;
  isLive(uid: string): boolean;
}

/**
 * One cloud object, one resource. A claim another resource has proved wins; so does the live resource
 * an owner marker names. The asker holds the object when it proved the claim itself, when the marker
 * names it, or when nobody else names the object at all. Two resources that both merely name an
 * unproved object are both refused: neither may act on what it cannot show is its own. The reasons name
 * no other resource, which may live in a namespace the asker must not learn about.
 */
export function judgeClaim(q: ClaimQuestion): ClaimVerdict {
  const others = q.claims.filter((claim) => claim.uid !== q.uid);
  if (others.some((claim) => claim.proved)) {
    return { holds: false, reason: 'another resource already manages it' };
  }
  if (q.marker !== undefined && q.marker !== q.uid && q.isLive(q.marker)) {
    return { holds: false, reason: 'it was created for another resource, which still exists' };
  }
  if (q.statusId === q.id || q.marker === q.uid || others.length === 0) return { holds: true };
  return { holds: false, reason: 'another resource names it too, and neither has proved it is its own' };
}
