// When a virtual node shows it is alive, on a kubelet's cadence: the node-lifecycle controller marks a
// node NotReady (and in time evicts its Pods) when neither its Lease nor its NodeReady heartbeat is
// renewed within its grace period (40-50 s by version). Pure.

/** The Lease's duration, a kubelet's default (--node-lease-duration-seconds). */
export const LEASE_DURATION_SECONDS = 40;
/** Renewed every quarter of its duration, as a kubelet does: three renewals may fail before it expires. */
export const LEASE_RENEW_MS = (LEASE_DURATION_SECONDS * 1000) / 4;
/** The node's status is written when it changes, and at least this often (its conditions' heartbeat). */
export const STATUS_REPORT_MS = 60_000;

/** Milliseconds from `now` until the Lease renewed at `renewedAt` (epoch ms; undefined: never) is due. */
export function renewalDueIn(renewedAt: number | undefined, now: number): number {
  if (renewedAt === undefined) return 0;
  return Math.max(0, renewedAt + LEASE_RENEW_MS - now);
}

/** Whether a status whose last heartbeat was at `heartbeatAt` (epoch ms; NaN: none) must be written again. */
export function heartbeatDue(heartbeatAt: number, now: number): boolean {
  return !(heartbeatAt + STATUS_REPORT_MS > now);
}
