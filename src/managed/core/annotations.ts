/** The annotations and finalizer through which users and the operator talk about a custom resource. */

/** The cloud id. Set by the operator after a create; set by a user to adopt an existing cloud resource. */
export const EXTERNAL_ID = 'gpucloud.io/external-id';

/** `"true"` leaves the resource alone: no cloud call, no status write, deletion not blocked. */
export const SKIP_RECONCILE = 'gpucloud.io/skip-reconcile';

/**
 * Written, with the time in epoch milliseconds, before a create call is sent, and removed once the cloud
 * id is recorded. Finding it on a resource without an id means a create may have happened that nobody
 * recorded, so the cloud is searched before anything is created again.
 */
export const CREATE_INTENT = 'gpucloud.io/create-intent';

/**
 * Written with the create intent: the cloud name the create is sent with. A VM carries no owner marker,
 * so recovery finds it by name — this one, not the spec's name now, which a user may have changed before
 * the id was recorded.
 */
export const CREATE_NAME = 'gpucloud.io/create-name';

/**
 * Written with the create intent, and sealed with it, for a resource the operator places: the offer the
 * create is sent for (JSON, as status.placement). A process that finds the intent and no object creates
 * again on this offer, never on another: the first create may still land.
 */
export const CREATE_PLACEMENT = 'gpucloud.io/create-placement';

/**
 * Set by the resource's user to lift the operator's pause (idle, deadline, budget): any new value resumes
 * the object, as a new generation of the spec does. `gpucloud resume` writes the time; kubectl can too.
 */
export const RESUME = 'gpucloud.io/resume';

/**
 * `"true"` protects the resource from deletion: the admission policy refuses a DELETE of it (kubectl delete,
 * an Argo CD prune, a namespace deletion), and where no policy is installed the operator keeps its
 * finalizer and leaves the cloud object alone. Removing the annotation lifts it.
 */
export const DELETION_PROTECTION = 'gpucloud.io/deletion-protection';

/**
 * Written by the operator in the very write that fills spec fields from the cloud object (late
 * initialisation): which fields it filled, sorted and comma-separated (empty: none). The record that
 * `status.lateInitialized` shows, kept with the fill itself so that no crash and no stale copy can part them.
 */
export const LATE_INITIALIZED = 'gpucloud.io/late-initialized';

/** What the operator writes only for itself: a change to these alone is no news to reconcile. */
export const BOOKKEEPING = [CREATE_INTENT, CREATE_NAME, CREATE_PLACEMENT, LATE_INITIALIZED] as const;

/** Holds deletion of the custom resource until its cloud resource is gone (or orphaned by policy). */
export const FINALIZER = 'gpucloud.io/finalizer';

/** The environment variable that marks a cloud pod or endpoint as made for one custom resource (its uid). */
export const OWNER_ENV = 'GPUCLOUD_OWNER_UID';

/** The cloud id a resource names in its external-id annotation; an empty value names nothing. */
export function namedId(mr: {
  metadata: { annotations?: Record<string, string> | undefined };
}): string | undefined {
  const id = mr.metadata.annotations?.[EXTERNAL_ID];
  return id === '' ? undefined : id;
}

/** Whether the resource is protected from deletion (`gpucloud.io/deletion-protection: "true"`). */
export function isDeletionProtected(mr: {
  metadata: { annotations?: Record<string, string> | undefined };
}): boolean {
  return mr.metadata.annotations?.[DELETION_PROTECTION] === 'true';
}
