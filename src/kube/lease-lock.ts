import { z } from 'zod';
import { isStatus, type KubeClient } from './client.ts';
import { kubeObjectSchema, type ObjectKey } from './object.ts';
import { apiVersionOf, collectionPath, leases, objectPath } from './resource-type.ts';

export const leaseSchema = kubeObjectSchema.extend({
  spec: z
    .looseObject({
      holderIdentity: z.string().nullish(),
      leaseDurationSeconds: z.number().int().nullish(),
      acquireTime: z.string().nullish(),
      renewTime: z.string().nullish(),
      leaseTransitions: z.number().int().nullish(),
    })
    .optional(),
});
export type Lease = z.infer<typeof leaseSchema>;

/** Who leads, as written in the Lease (client-go's `LeaderElectionRecord`). */
export interface LeaderRecord {
  /** `''` when nobody holds the lease (it was released). */
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  readonly acquireTime: Date;
  readonly renewTime: Date;
  readonly leaseTransitions: number;
}

/** A read Lease: its record, and the object itself for the next optimistic update. */
export interface ObservedLease {
  readonly record: LeaderRecord;
  readonly lease: Lease;
}

/**
 * `coordination.k8s.io/v1` Lease used as a lock. Updates carry the resourceVersion last read, so
 * two candidates racing for the lease cannot both win: the second gets a 409 Conflict.
 */
export class LeaseLock {
  readonly key: ObjectKey;
  readonly #client: KubeClient;

  constructor(client: KubeClient, key: ObjectKey) {
    this.#client = client;
    this.key = key;
  }

  /** The lease, or `undefined` when it does not exist yet. */
  async get(timeoutMs: number): Promise<ObservedLease | undefined> {
    try {
      const lease = await this.#client.request(leaseSchema, {
        method: 'GET',
        path: objectPath(leases, this.key),
        timeoutMs,
      });
      return { lease, record: recordOf(lease) };
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  async create(record: LeaderRecord, timeoutMs: number): Promise<ObservedLease> {
    const body = {
      apiVersion: apiVersionOf(leases),
      kind: leases.kind,
      metadata: { name: this.key.name, namespace: this.key.namespace },
      spec: specOf(record),
    };
    const lease = await this.#client.request(leaseSchema, {
      method: 'POST',
      path: collectionPath(leases, this.key.namespace),
      body,
      timeoutMs,
    });
    return { lease, record: recordOf(lease) };
  }

  /** Replaces the record; fails with 409 if the lease changed since `current` was read. */
  async update(current: Lease, record: LeaderRecord, timeoutMs: number): Promise<ObservedLease> {
    const lease = await this.#client.request(leaseSchema, {
      method: 'PUT',
      path: objectPath(leases, this.key),
      body: { ...current, spec: { ...current.spec, ...specOf(record) } },
      timeoutMs,
    });
    return { lease, record: recordOf(lease) };
  }
}

function recordOf(lease: Lease): LeaderRecord {
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity ?? '',
    leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
    acquireTime: new Date(spec.acquireTime ?? 0),
    renewTime: new Date(spec.renewTime ?? 0),
    leaseTransitions: spec.leaseTransitions ?? 0,
  };
}

function specOf(record: LeaderRecord) {
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: microTime(record.acquireTime),
    renewTime: microTime(record.renewTime),
    leaseTransitions: record.leaseTransitions,
  };
}

/** `metav1.MicroTime` wants exactly six fractional digits; JavaScript gives three. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
