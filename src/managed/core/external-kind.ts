/**
 * The contract between the generic managed-resource reconciler (`src/managed/`) and one kind of
 * cloud resource. The reconciler owns everything that is the same for every kind — finalizers,
 * conditions, events, backoff, adoption, deletion policy, crash-safe creation, status patching — and asks
 * the kind only what it alone knows: how to list, read, create, change and delete its cloud objects, and
 * how cloud state reads as custom-resource status.
 *
 * Adding a kind means writing one `ExternalKind` and one schema; nothing else changes.
 */

import type { ObjectKey } from '../../kube/object.ts';
import type { Demand } from './demand.ts';
import type { ManagementPolicy, RecoveryPolicy, SecretRotationPolicy } from './policies.ts';
import type { ManagedStatus } from './status-schema.ts';

/** The parts of a custom resource the generic layer and adapters read. */
export type ManagedObject<Spec> = {
  apiVersion: string;
  kind: string;
  metadata: {
    namespace: string;
    name: string;
    uid: string;
    creationTimestamp?: string;
    generation: number;
    resourceVersion: string;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
  };
  spec: Spec;
  status?: ManagedStatus;
};

/** The spec fields the generic layer reads; every kind's spec has them. */
export interface CommonSpec {
  deletionPolicy?: 'Delete' | 'Orphan' | undefined;
  /** The name in the cloud; metadata.name when absent. */
  name?: string | undefined;
  /** What the operator may do to the cloud object; every action when absent. */
  managementPolicies?: readonly ManagementPolicy[] | undefined;
  /** Kinds with spot capacity: whether a preempted object is replaced. */
  recoveryPolicy?: RecoveryPolicy | undefined;
  /** A Secret of the resource's namespace to write its connection details into. */
  writeConnectionSecretToRef?: { name: string } | undefined;
  /**
   * Fields the cloud may own (docs/design.md §8.6): their cloud values stand for the spec's, and drift in
   * them is not reported. The kind's schema says which may be listed.
   */
  ignoreDrift?: readonly string[] | undefined;
  /** Kinds with `rotatedSecrets`: whether a rotation replaces the object (`Recreate`) or is reported. */
  secretRotationPolicy?: SecretRotationPolicy | undefined;
  /** Kinds whose objects finish: how long a finished resource stays before the operator deletes it. */
  ttlSecondsAfterFinished?: number | undefined;
}

/** The name the cloud resource gets: `spec.name`, or the custom resource's own name. */
export function cloudName(mr: { metadata: { name: string }; spec: CommonSpec }): string {
  return mr.spec.name ?? mr.metadata.name;
}

/** An environment variable after `valueFrom.secretKeyRef` has been resolved. */
export interface EnvVar {
  key: string;
  value: string;
}

/** What an adapter may ask of the reconciler while it acts. */
export interface ActContext {
  /**
   * Resolves `value` / `valueFrom.secretKeyRef` items from Secrets in the resource's namespace. The values
   * must go only to the cloud API: never into logs, events, errors or status.
   */
  resolveEnv(items: ReadonlyArray<EnvSource> | undefined): Promise<EnvVar[]>;
  /**
   * Whether a Secret `resolveEnv` read in this reconcile changed since the resource's previous reconcile
   * read it; false when this process has not seen it read before (a restart).
   */
  secretsChanged(): boolean;
  /** The env var that marks a cloud object as made for this custom resource (crash recovery). */
  readonly ownerMarker: EnvVar;
}

export interface EnvSource {
  key: string;
  value?: string | undefined;
  valueFrom?: { secretKeyRef: { name: string; key: string } } | undefined;
}

/** The Ready condition and phase that a cloud object's state reads as. */
export interface Readiness {
  ready: boolean;
  /** CamelCase, stable: no ids, times or counts (a changing reason would mean a status write). */
  reason: string;
  message: string;
  /** The cloud reports the resource broken (FAILED, DEGRADED): worth a Warning event. */
  broken?: boolean;
}

/**
 * What one cloud object is for one resource, read once, as crossplane-runtime's `ExternalClient.Observe`
 * answers one `ExternalObservation`: every part of a turn that reports the object (the phase, Ready, the
 * kind's status fields, Synced's drift) reads this one value, so no two of them can judge different copies
 * of the resource or different answers of the kind.
 */
export interface Observation<Status extends object = Record<string, unknown>> {
  /** The same as `phaseOf` answers for the object. */
  readonly phase: string;
  /** The Ready condition the object's state reads as, for this resource's spec. */
  readonly readiness: Readiness;
  /** The kind's own status fields, from the object and what the resource's last plan decided. */
  readonly status: Partial<Status>;
  /**
   * Spec fields that differ from the object and that the cloud cannot change: reported as `Synced=False`,
   * reason `Drifted`, never fixed by a silent re-create. Only fields the object reports; the generic layer
   * leaves out those `ignoreDrift` lets the cloud own.
   */
  readonly drift: readonly string[];
}

/** Why a resource cannot have its object created yet (a resource it refers to is not ready): it waits. */
export interface Blocker {
  /** CamelCase and stable, as a Ready reason. */
  reason: string;
  message: string;
}

/** How a finished object ended, named as the condition a Job sets. */
export const OUTCOMES = ['Complete', 'Failed'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/**
 * One step toward the desired state. `describe` names it for events and logs ("Paused", "Renamed to x");
 * `run` performs exactly one cloud call, so a crash between steps is always safe to resume from.
 */
export interface Step {
  reason: string;
  describe: string;
  run(): Promise<void>;
}

/**
 * The plan that takes one step: the one way an adapter acts. `run` makes exactly one cloud call; what it
 * answers is dropped.
 */
export function act(reason: string, describe: string, run: () => Promise<unknown>): Plan {
  return {
    kind: 'act',
    step: {
      reason,
      describe,
      run: async () => {
        await run();
      },
    },
  };
}

/** The plan with `first` run right before its step, if it has one: how the fence and the guardrails stand in front. */
export function beforeStep(plan: Plan, first: () => void): Plan {
  if (plan.kind !== 'act') return plan;
  const { step } = plan;
  return {
    ...plan,
    step: {
      ...step,
      run: () => {
        first();
        return step.run();
      },
    },
  };
}

/** What the reconciler should do about a cloud object that differs from the spec. */
export type Plan =
  | { kind: 'in-sync' }
  /** The cloud is moving on its own (INITIALIZING, PAUSING, ...): look again soon, change nothing. */
  | { kind: 'wait'; reason: string }
  | { kind: 'act'; step: Step };

/**
 * `Status` is the kind's status as its schema types it (`z.output` of the status schema): `observe` must
 * answer fields of it, and `connectionDetails` reads it typed. The generic layer sees it as a record.
 */
export interface ExternalKind<Spec, Cloud, Status extends object = Record<string, unknown>> {
  /** The custom resource's kind, e.g. `GpuPod`. */
  readonly kind: string;

  /** Every cloud object of this kind in the organisation, all pages: the poller's one call per interval. */
  list(): Promise<Cloud[]>;
  /** One object by id, or `undefined` when the cloud says it does not exist. */
  get(id: string): Promise<Cloud | undefined>;
  idOf(cloud: Cloud): string;
  /** When the cloud made the object (epoch ms), to tell an interrupted create's object from older ones. */
  createdAtOf(cloud: Cloud): number;
  /**
   * Fields whose change must wake the custom resource's reconcile (status, name, workers, ...). While it
   * is unchanged the cloud cache keeps the copy it first listed: fields outside it are not watched.
   */
  fingerprint(cloud: Cloud): string;
  /**
   * Completes a listed object when the list carries less than a get (the pod list omits ssh command,
   * ports and prices). Called only when the object's fingerprint changed since it was last completed, and
   * never for what `create` answered, which must be complete.
   */
  enrich?(cloud: Cloud): Promise<Cloud>;
  /** The object is gone for good (TERMINATED, or on its way there) and must not be adopted or kept. */
  isGone(cloud: Cloud): boolean;
  /**
   * The phase the object's state reads as, a fact of the object alone (like `isGone`): the cloud cache
   * compares phases of objects no resource may hold, where there is no resource to observe them for. Every
   * `observe` answers this same phase.
   */
  phaseOf(cloud: Cloud): string;
  /**
   * How the object reads for the resource: its one observation, made once per reconcile turn from the
   * copy of the resource the turn settled on (late-initialised, cloud-owned fields taken, the operator's
   * pause applied) and handed to every part of the turn that reports it. See `Observation`.
   */
  observe(mr: ManagedObject<Spec>, cloud: Cloud): Observation<Status>;
  create(mr: ManagedObject<Spec>, ctx: ActContext): Promise<Cloud>;
  /** The one step toward the spec, judged on the same copy of the resource as `observe`. */
  plan(mr: ManagedObject<Spec>, cloud: Cloud, ctx: ActContext): Promise<Plan>;
  /** Deletes the object; kinds whose objects cannot be deleted (finished tasks) have none. */
  delete?(id: string): Promise<void>;

  // The capabilities: each optional, each a named object a kind supplies or leaves out.

  /** Kinds that tell their objects apart by more than a name: see `IdentitySupport`. */
  readonly identity?: IdentitySupport<Spec, Cloud>;
  /** Kinds whose objects hold GPUs or cost money: see `MeteringSupport`. */
  readonly metering?: MeteringSupport<Spec, Cloud>;

  /**
   * Late initialisation: fields a user may leave out are filled from the cloud object, once, when the
   * resource is created or adopted — so adopting never changes what it adopts. Top-level fields only (a
   * diff tool then sees a field it can ignore, not a changed list), never environment values, which may
   * be secrets. Until it has run, a field left out means "as the cloud has it".
   */
  readonly lateInit?: {
    /**
     * The cloud object's values of the late-initialised fields the spec may take (it may rule some out).
     * Not part of `observe`: these values build the very copy the turn observes (the fill, the fields
     * `ignoreDrift` lets the cloud own), so they are read before it exists. A rule-out may read only fields
     * the user sets, never one late initialisation, a cleared value or the operator's pause changes: then
     * every copy of the turn gets the same answer.
     */
    from(cloud: Cloud, spec: Spec): Partial<Spec>;
    /** What a late-initialised field removed afterwards means (paused: false): never filled again. */
    readonly cleared: Partial<Spec>;
  };
  /** Kinds whose objects carry Secrets' values or hand out connection details: see `SecretSupport`. */
  readonly secrets?: SecretSupport<Spec, Cloud, Status>;
  /** Kinds whose specs may leave the GPU type, region or spot to the operator: the offers to choose from. */
  readonly placement?: PlacementSupport<Spec, Cloud>;
  /** Kinds that rent spot capacity: whether the spec asks for it, and whether the cloud took it back. */
  readonly spot?: {
    requested(spec: Spec): boolean;
    /** The cloud cannot tell a preemption from another failure: a spot object FAILED counts as one. */
    preempted(cloud: Cloud): boolean;
  };
  /**
   * Kinds whose objects pause and keep their data (pods): what the operator's own pause (idle, a deadline,
   * a budget) makes of the spec, and idle detection for resources that ask for it.
   */
  readonly pause?: {
    /** The spec with the object paused: what the plan, readiness and the guardrails see while it is held. */
    paused(spec: Spec): Spec;
    readonly idle?: {
      /** The idle rule the spec asks for; undefined: never paused for being idle. */
      rule(spec: Spec): IdleRule | undefined;
      /** Cloud calls one `check` makes, for the idle schedule's budget. */
      readonly calls: number;
      /** Whether the object runs, so that there is utilisation to read. */
      applies(cloud: Cloud): boolean;
      /**
       * One look at the object's utilisation over the rule's window, ending `now`: why it is idle, or
       * undefined when it is busy or cannot be told (younger than the window, samples missing).
       */
      check(cloud: Cloud, rule: IdleRule, now: number): Promise<string | undefined>;
    };
    /** Pausing to bring a budget back within its limit (a budget's `onExceeded: PausePods`). */
    readonly shedding?: {
      /** Whether the resource lets the operator pause it for a budget; undefined: it does not parse. */
      allowed(spec: Spec | undefined): boolean;
      /** How busy its object was when its status last said, in percent: the idlest are paused first. */
      utilization(mr: ManagedObject<unknown>): number | undefined;
    };
  };
  /** Kinds whose resources have a deadline (`activeDeadlineSeconds`): see `DeadlineSupport`. */
  readonly deadline?: DeadlineSupport<Spec>;
  /**
   * Kinds whose objects finish, as a Job's pods do: the outcome a phase means, if it is final. A finished
   * resource gets the `Complete` or `Failed` condition and is never read from the cloud again; its
   * `ttlSecondsAfterFinished` then deletes it. An object gone before it finished fails it: it is never
   * created again.
   */
  readonly finite?: { outcomeOf(phase: string): Outcome | undefined };

  /**
   * Kinds that act on what the lists do not show (an autoscaled endpoint watches its queue): how soon to
   * reconcile a resource again when nothing changes.
   */
  readonly revisit?: { afterMs(mr: ManagedObject<Spec>): number | undefined };

  /**
   * Per-object data that the list does not carry and that changes slowly (runtime, metrics, task
   * counts). Fetched on a budgeted schedule, never on every reconcile.
   */
  readonly details?: {
    /** Cloud calls one `fetch` makes, so the budget counts requests, not fetches. */
    readonly calls: number;
    /** The status keys `fetch` fills; carried over from the current status until the next fetch. */
    readonly fields: readonly string[];
    applies(cloud: Cloud): boolean;
    /**
     * `status`: the status this turn writes, which keeps what the cloud's view may leave out (the list's
     * view of a pod has no prices).
     */
    fetch(cloud: Cloud, status?: Readonly<Record<string, unknown>>): Promise<Record<string, unknown>>;
  };
}

/** One thing the cloud rents out now: a GPU type in a region, spot or on-demand, at a price per GPU-hour. */
export interface Offer {
  readonly gpuType: string;
  readonly region: string;
  readonly spot: boolean;
  readonly pricePerGpuHour: number;
}

/** The offers a spec accepts, best first, and when the search they come from was read (epoch ms). */
export interface Offers {
  readonly asOf: number;
  readonly offers: readonly Offer[];
  /** Why nothing fits, in words, for when `offers` is empty. */
  readonly none: string;
}

/**
 * What a kind that lets the operator choose where its objects run tells the generic layer (pods: GPU type,
 * region and spot from the GPU search). The choice itself, its record and failover are generic.
 */
export interface PlacementSupport<Spec, Cloud> {
  /** Whether the spec leaves the choice to the operator. */
  requested(spec: Spec): boolean;
  /**
   * The offers with room that satisfy the spec and the account's GPU-type allow-list, in the spec's order
   * (cheapest first unless it says otherwise), from the account's cached search: no call per resource.
   */
  offers(spec: Spec, allowed: (gpuType: string) => boolean): Promise<Offers>;
  /** How many offers one placement tries before it waits for fresher offers. */
  maxAttempts(spec: Spec): number;
  /** How often the offers are read again: how soon a placement that found nothing looks again. */
  readonly refreshMs: number;
  /** The price per GPU-hour the object says the cloud charges it. */
  charged(cloud: Cloud): string | undefined;
  /** The most the spec lets an object be charged per GPU-hour; undefined: no cap. */
  maxPricePerGpuHour(spec: Spec): number | undefined;
  /**
   * Whether the object failed before it ever ran, as when its offer turned out to have no room: `phase` is
   * the one its resource's status last recorded for this object (undefined for a replacement the status
   * does not name yet). Such an object is deleted and the resource placed again.
   */
  failedToStart(cloud: Cloud, phase: string | undefined): boolean;
}

/** A resource's rule for pausing an idle object: utilisation below a percentage for a number of minutes. */
export interface IdleRule {
  readonly belowPercent: number;
  readonly forMinutes: number;
}

/** Kinds whose resources have a deadline, counted from their first object's creation. */
export interface DeadlineSupport<Spec> {
  /** The spec's deadline: its seconds and what it does; undefined when the spec sets none. */
  of(spec: Spec): Deadline | undefined;
}

/** What happens when a resource's deadline passes: its object paused (held), or deleted for good. */
export interface Deadline {
  readonly seconds: number;
  readonly action: 'Pause' | 'Delete';
}

/** `namespace/name` of a custom resource: the work-queue key and the key of per-resource memory. */
export function keyOf(obj: { metadata: ObjectKey }): string {
  return `${obj.metadata.namespace}/${obj.metadata.name}`;
}

/**
 * Which cloud object is a resource's, for kinds that tell their objects apart by more than a name: the owner
 * marker, an interrupted create's object, an id the client chooses, and what must hold before a create.
 * A kind without it finds no interrupted create of its own.
 */
export interface IdentitySupport<Spec, Cloud> {
  /**
   * The uid in the object's owner marker (`ActContext.ownerMarker`), for kinds whose objects carry one;
   * `undefined` when the kind carries none or this view of the object does not show it.
   */
  markerOf?(cloud: Cloud): string | undefined;

  /**
   * Could `cloud` be what an interrupted create for `mr` made? Called only for objects created after both
   * the resource and its create intent, claimed by no other custom resource, and whose owner marker, where
   * this view shows one, names `mr`; reads details if it must.
   */
  isOwnCreate(mr: ManagedObject<Spec>, cloud: Cloud, ctx: ActContext): Promise<boolean>;
  /**
   * Kinds whose ids the client chooses (a task's id): the id the object made for `mr` has, so what an
   * interrupted create made is found by one get instead of a search of the lists, and a second create is
   * refused by the cloud itself.
   */
  ownId?(mr: ManagedObject<Spec>): string;
  /**
   * What must hold before the object can be created, read from caches only (no cloud call): a resource
   * it refers to must exist and be ready. Answers why it waits, or throws a terminal `ReconcileError`
   * when waiting cannot help.
   */
  blocker?(mr: ManagedObject<Spec>): Blocker | undefined;
}

/** Kinds whose objects carry Secrets' values (a pod's environment) or hand out connection details. */
export interface SecretSupport<Spec, Cloud, Status extends object = Record<string, unknown>> {
  /**
   * Kinds whose objects keep the environment they were created with (pods): the Secrets (`secretKeyRef`
   * names) whose values now differ from what the object carries, compared in memory. Reported as
   * `Synced=False`, reason `SecretRotated`: the cloud cannot change the object's environment.
   */
  rotatedSecrets?(mr: ManagedObject<Spec>, cloud: Cloud, ctx: ActContext): Promise<string[]>;
  /**
   * What a workload needs to reach the object (SSH command, addresses, URLs), from the status about to be
   * written, as the keys and values of its connection Secret.
   */
  connectionDetails?(status: Readonly<Partial<Status>>): Record<string, string>;
}

/**
 * What a kind's objects ask of an account and hold in it, for the guardrails, the budgets and budget
 * shedding. A kind without it (a task) asks for nothing live, holds no GPU and costs nothing: `UNMETERED`.
 */
export interface MeteringSupport<Spec, Cloud> {
  /** What the spec asks of its account (GPUs, registry and credential ids): the account's policy checks it. */
  demand(mr: ManagedObject<Spec>): Promise<Demand>;
  /**
   * GPUs the object holds, or may hold at any moment: in every state but the ones that release them
   * (paused, stopped, gone), so an object on its way up (INITIALIZING) or down, or FAILED, still counts.
   * Summed per account over every object its lists show, managed or not: what the guardrails count. Not
   * the fleet gauges' `runningGpus`, which count only what runs and bills now.
   */
  heldGpus(cloud: Cloud): number;
  /**
   * US dollars per hour the object costs while it holds GPUs (0 when it holds none): its own price, or
   * today's offers for what the list shows; undefined when nothing prices it. What the budgets count.
   */
  priceOf(cloud: Cloud): Promise<number | undefined>;
}

/** What a kind without metering asks and holds: nothing live, no GPU, no cost. */
export const UNMETERED: MeteringSupport<unknown, unknown> = {
  demand: async () => ({ live: false }),
  heldGpus: () => 0,
  priceOf: async () => 0,
};

/** The kind's metering, or `UNMETERED` for a kind without it. */
export function meteringOf<Spec, Cloud>(
  kind: Pick<ExternalKind<Spec, Cloud>, 'metering'>,
): MeteringSupport<Spec, Cloud> {
  return kind.metering ?? UNMETERED;
}
