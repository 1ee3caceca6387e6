import { z } from 'zod';
import { KubeApiError, type KubeRequests } from '../../kube/client.ts';
import { collectionPath, objectPath, type ResourceType, secrets } from '../../kube/resource-type.ts';
import { readSecret, readSecretObject } from '../../kube/secrets.ts';
import type { ManagedObject } from './external-kind.ts';
import { managedEnvelope } from './store.ts';

const MAX_OWN_WRITES = 10_000;

/** The `type` of the Secrets the operator writes connection details into. */
export const CONNECTION_SECRET_TYPE = 'connection.gpucloud.io/v1';

/** The apiserver refuses a patch whose uid is not the stored object's: metadata.uid is immutable. */
function isUidMismatch(error: unknown): error is KubeApiError {
  return error instanceof KubeApiError && error.status === 422 && /metadata\.uid/.test(error.message);
}

/** A resource replaced by a new one of the same name is gone, as far as a write meant for it goes. */
function replaced(error: KubeApiError): KubeApiError {
  return new KubeApiError(
    error.method,
    error.path,
    404,
    'NotFound',
    'the resource was deleted and a new one of that name took its place',
  );
}

/** The resource as the controller owner of what it makes: garbage-collected with it. */
function controllerReference(mr: ManagedObject<unknown>) {
  const { apiVersion, kind, metadata } = mr;
  return {
    apiVersion,
    kind,
    name: metadata.name,
    uid: metadata.uid,
    controller: true,
    blockOwnerDeletion: false,
  };
}

/** The generic reconciler's writes, as apiserver calls on one custom-resource kind. */
export function managedWriter(client: KubeRequests, resource: ResourceType): ManagedWriter {
  const path = (mr: ManagedObject<unknown>) => objectPath(resource, mr.metadata);
  // The version each metadata patch produced, keyed to the version it was made from and the resource's
  // uid, until its watch event comes or the resource goes (the event of a patch that removed the last
  // finalizer never comes: the apiserver deletes instead). Bounded besides, against events missed.
  const ownWrites = new Map<string, { from: string; uid: string }>();
  const versionsOf = new Map<string, Set<string>>();
  const drop = (version: string) => {
    const write = ownWrites.get(version);
    if (!write) return;
    ownWrites.delete(version);
    const versions = versionsOf.get(write.uid);
    versions?.delete(version);
    if (versions?.size === 0) versionsOf.delete(write.uid);
  };
  return {
    isOwnWrite(from: string, to: string): boolean {
      const base = ownWrites.get(to)?.from;
      drop(to);
      return base === from;
    },
    forget(uid: string): void {
      for (const version of versionsOf.get(uid) ?? []) ownWrites.delete(version);
      versionsOf.delete(uid);
    },
    get size(): number {
      return versionsOf.size;
    },
    async patchObject(
      mr: ManagedObject<unknown>,
      patch: ObjectPatch,
      signal?: AbortSignal,
    ): Promise<Metadata> {
      // A merge patch replaces the whole finalizer list: make it conditional on what was read.
      const { ifUnchanged, spec, ...fields } = patch;
      // The uid always: a write meant for a deleted resource must never land on a new one of that name.
      const precondition = {
        uid: mr.metadata.uid,
        ...(fields.finalizers || ifUnchanged ? { resourceVersion: mr.metadata.resourceVersion } : {}),
      };
      const updated = await client
        .request(managedEnvelope, {
          method: 'PATCH',
          path: path(mr),
          body: { metadata: { ...fields, ...precondition }, ...(spec ? { spec } : {}) },
          signal,
        })
        .catch((error: unknown) => {
          throw isUidMismatch(error) ? replaced(error) : error;
        });
      const { uid } = mr.metadata;
      const version = updated.metadata.resourceVersion;
      ownWrites.set(version, { from: mr.metadata.resourceVersion ?? '', uid });
      versionsOf.set(uid, (versionsOf.get(uid) ?? new Set()).add(version));
      if (ownWrites.size > MAX_OWN_WRITES) drop(ownWrites.keys().next().value ?? '');
      return updated.metadata;
    },
    async patchStatus(
      mr: ManagedObject<unknown>,
      status: Record<string, unknown>,
      signal?: AbortSignal,
    ): Promise<string> {
      // Replacing status whole (a JSON patch `add` replaces an existing member) drops fields the cloud
      // no longer reports, which a merge patch would keep. The version read goes with it: a status derived
      // from a copy someone has written since is refused with a conflict, never stored over the newer one.
      // A resource of that name made anew has another version too, so the uid needs no check of its own.
      const updated = await client.request(managedEnvelope, {
        method: 'PATCH',
        path: `${path(mr)}/status`,
        patchType: 'application/json-patch+json',
        body: [
          { op: 'replace', path: '/metadata/resourceVersion', value: mr.metadata.resourceVersion },
          { op: 'add', path: '/status', value: status },
        ],
        signal,
      });
      return updated.metadata.resourceVersion;
    },
    async deleteObject(mr: ManagedObject<unknown>, signal?: AbortSignal): Promise<void> {
      // Preconditions: never a newer resource that took the same name.
      await client.request(z.unknown(), {
        method: 'DELETE',
        path: path(mr),
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          preconditions: { uid: mr.metadata.uid, resourceVersion: mr.metadata.resourceVersion },
        },
        signal,
      });
    },
    readSecret: (namespace, name) => readSecret(client, namespace, name),
    async writeOwnedSecret(mr, name, data) {
      const namespace = mr.metadata.namespace;
      const existing = await readSecretObject(client, namespace, name);
      const encoded = Object.fromEntries(
        Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
      );
      if (!existing) {
        await client.request(z.unknown(), {
          method: 'POST',
          path: collectionPath(secrets, namespace),
          body: {
            apiVersion: 'v1',
            kind: 'Secret',
            type: CONNECTION_SECRET_TYPE,
            metadata: { name, namespace, ownerReferences: [controllerReference(mr)] },
            data: encoded,
          },
        });
        return 'written';
      }
      const controller = existing.metadata.ownerReferences?.find((owner) => owner.controller === true);
      if (controller?.uid !== mr.metadata.uid) return 'not-owned';
      // Keys no longer reported are removed; the write is conditional, lest another writer's change be lost.
      const removed = Object.keys(existing.data ?? {}).filter((key) => !(key in encoded));
      await client.request(z.unknown(), {
        method: 'PATCH',
        path: objectPath(secrets, { namespace, name }),
        body: {
          metadata: { resourceVersion: existing.metadata.resourceVersion },
          data: { ...encoded, ...Object.fromEntries(removed.map((key) => [key, null])) },
        },
      });
      return 'written';
    },
  };
}

export interface ObjectPatch {
  annotations?: Record<string, string | null>;
  finalizers?: string[];
  /** Spec fields to set (late initialisation): only ever fields the spec left out. */
  spec?: Record<string, unknown>;
  /** Fail with a conflict unless the object is still the version read (always so for finalizers). */
  ifUnchanged?: boolean;
}

export type Metadata = ManagedObject<unknown>['metadata'];

/** The writes the generic reconciler makes, each one call to the apiserver. */
export interface ManagedWriter {
  /**
   * Merge-patches metadata (and late-initialised spec fields) and answers the metadata as stored. A
   * finalizer change is conditional on the resourceVersion read, so a concurrent change to the list is
   * never overwritten.
   */
  patchObject(mr: ManagedObject<unknown>, patch: ObjectPatch, signal?: AbortSignal): Promise<Metadata>;
  /**
   * Whether an update from version `from` to `to` is exactly one of this writer's metadata patches: news
   * only to the reconcile that made it, which carried on with it. An update that spans more (a relist
   * after a missed event) is not. Each version is answered once.
   */
  isOwnWrite(from: string, to: string): boolean;
  /** Forgets the patches made to resource `uid` whose events have not come: it is gone. */
  forget(uid: string): void;
  /** Resources with a patch whose event has not come yet. */
  readonly size: number;
  /**
   * Replaces the status whole, only on the version `mr` was read at (a 409 conflict otherwise); answers the
   * resourceVersion it made, which the next write of the same turn must carry.
   */
  patchStatus(
    mr: ManagedObject<unknown>,
    status: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<string>;
  /** Deletes the resource, only as it was read (a finished task past its TTL). */
  deleteObject(mr: ManagedObject<unknown>, signal?: AbortSignal): Promise<void>;
  /** A Secret's decoded data, or `undefined` when the Secret does not exist. */
  readSecret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  /**
   * Creates or updates Secret `name` in the resource's namespace with `data`, owned by the resource;
   * `not-owned` (and nothing written) when a Secret of that name exists that the resource does not control.
   */
  writeOwnedSecret(
    mr: ManagedObject<unknown>,
    name: string,
    data: Record<string, string>,
  ): Promise<'written' | 'not-owned'>;
}
