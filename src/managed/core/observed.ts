import { createHash } from 'node:crypto';

/** A view of the cloud object; `partial` when it is the list's view, trusted with the status for the rest. */
export interface CloudView<Cloud> {
  cloud: Cloud;
  partial: boolean;
}

/** A short digest of a cloud object's watched fields, kept in status to tell whether it still holds. */
export function fingerprintDigest(fingerprint: string): string {
  return createHash('sha256').update(fingerprint).digest('base64url').slice(0, 22);
}
