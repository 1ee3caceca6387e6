// Small fakes of the generic reconciler's own interfaces, as crossplane-runtime tests its managed
// reconciler: a kind ("Widget") over an in-memory cloud, an in-memory apiserver that is both the
// informer's store and the writer (preconditions, finalizers and deletion as the apiserver keeps them),
// and what a world records of events and fleet events. world.ts runs the real AccountLinks, Creation,
// CloudCache, AccountRegistry and ManagedReconciler on top of them.

import { z } from 'zod';
import { KubeApiError } from '../../src/kube/client.ts';
import type { ObjectKey } from '../../src/kube/object.ts';
import { accountOf } from '../../src/managed/core/account-ref.ts';
import { EXTERNAL_ID } from '../../src/managed/core/annotations.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import {
  type Blocker,
  type CommonSpec,
  cloudName,
  type ExternalKind,
  keyOf,
  type ManagedObject,
} from '../../src/managed/core/external-kind.ts';
import type { Claim, ManagedStore } from '../../src/managed/core/store.ts';
import type { ManagedWriter, Metadata, ObjectPatch } from '../../src/managed/core/writer.ts';

export interface WidgetSpec extends CommonSpec {
  size?: number | undefined;
  paused?: boolean | undefined;
  spot?: boolean | undefined;
  deadlineSeconds?: number | undefined;
  deadlineAction?: 'Pause' | 'Delete' | undefined;
  idleBelowPercent?: number | undefined;
  pauseOnBudget?: boolean | undefined;
  providerConfigRef?: { name: string } | undefined;
}

const widgetSpec = z.looseObject({
  size: z.number().int().optional(),
  paused: z.boolean().optional(),
  spot: z.boolean().optional(),
  name: z.string().optional(),
  deletionPolicy: z.enum(['Delete', 'Orphan']).optional(),
  managementPolicies: z
    .array(z.enum(['Observe', 'Create', 'Update', 'Delete', 'LateInitialize', '*']))
    .optional(),
  recoveryPolicy: z.enum(['Never', 'Recreate']).optional(),
  deadlineSeconds: z.number().int().optional(),
  deadlineAction: z.enum(['Pause', 'Delete']).optional(),
  idleBelowPercent: z.number().optional(),
  pauseOnBudget: z.boolean().optional(),
  writeConnectionSecretToRef: z.object({ name: z.string() }).optional(),
  providerConfigRef: z.object({ name: z.string() }).optional(),
});

/** A stored widget spec as the reconciler parses it; one that does not parse throws, as a kind's schema does. */
export function parseWidgetSpec(raw: unknown): WidgetSpec {
  return widgetSpec.parse(raw);
}

export type WidgetStatus = 'RUNNING' | 'PAUSED' | 'FAILED' | 'TERMINATED';

export interface Widget {
  id: string;
  name: string;
  status: WidgetStatus;
  size: number;
  spot: boolean;
  /** The owner marker: the uid of the resource it was made for. */
  marker?: string | undefined;
  createdAt: number;
  /** Which account (organisation) holds it: another account's key cannot see it. */
  org: string;
  /** The offer's GPU type it was placed on, and the price per GPU-hour it is charged (placed widgets). */
  gpuType?: string | undefined;
  charged?: number | undefined;
}

export type Kind = ExternalKind<WidgetSpec, Widget>;

/** The widget kind as a kind that cannot pause (an endpoint's, say). */
export const cannotPause = ({ pause: _none, ...kind }: Kind): Kind => kind;

/** The widget kind pausing only at deadlines: neither idle checks nor budget shedding. */
export const pausesOnlyAtDeadlines = (kind: Kind): Kind => ({
  ...kind,
  pause: kind.pause && { paused: kind.pause.paused },
});

/** The widget kind with a blocker: what holds up a resource's create (a volume not ready, say). */
export const blockedBy =
  (blocker: () => Blocker | undefined) =>
  (kind: Kind): Kind => ({
    ...kind,
    identity: {
      ...kind.identity,
      isOwnCreate: kind.identity?.isOwnCreate ?? (async () => false),
      blocker,
    },
  });

/** What one unit of a widget costs per hour, in the budgets' dollars. */
export const WIDGET_PRICE_PER_HOUR = 2;

/** A cloud of widgets for one organisation's key, with a log of every call and hooks to interleave. */

export class FakeCloud {
  readonly objects = new Map<string, Widget>();
  readonly calls: Array<{ op: string; id?: string | undefined }> = [];
  #next = 100;
  /** Runs inside `create`, after the object exists and before the answer: a place to interleave. */
  duringCreate: (() => Promise<void> | void) | undefined;
  /** Thrown by the next create, once. */
  failNextCreate: Error | undefined;
  /** How long a create takes to answer, after the object exists: a slow cloud. */
  createDelayMs = 0;
  /** GPU utilisation over the idle window by widget id; a widget without one has no samples. */
  readonly utilization = new Map<string, number>();

  put(fields: Partial<Widget> & { name: string }): Widget {
    const widget: Widget = {
      id: String(this.#next++),
      status: 'RUNNING',
      size: 1,
      spot: false,
      createdAt: Date.now(),
      org: 'org-1',
      ...fields,
    };
    this.objects.set(widget.id, widget);
    return { ...widget };
  }

  live(): Widget[] {
    return [...this.objects.values()].filter((widget) => widget.status !== 'TERMINATED');
  }

  /** Calls that change something, optionally about one id. */
  mutations(id?: string): Array<{ op: string; id?: string | undefined }> {
    return this.calls.filter(
      (call) => call.op !== 'list' && call.op !== 'get' && (id === undefined || call.id === id),
    );
  }

  kind(org = 'org-1', name = 'Widget'): Kind {
    const visible = (widget: Widget | undefined) =>
      widget && widget.org === org ? { ...widget } : undefined;
    const step = (reason: string, describe: string, run: () => void) => ({
      kind: 'act' as const,
      step: { reason, describe, run: async () => run() },
    });
    return {
      kind: name,
      list: async () => {
        this.calls.push({ op: 'list' });
        return [...this.objects.values()]
          .filter((widget) => widget.org === org)
          .map((widget) => ({ ...widget }));
      },
      get: async (id) => {
        this.calls.push({ op: 'get', id });
        return visible(this.objects.get(id));
      },
      idOf: (widget) => widget.id,
      createdAtOf: (widget) => widget.createdAt,
      fingerprint: (widget) => `${widget.status}/${widget.name}/${widget.size}`,
      isGone: (widget) => widget.status === 'TERMINATED',
      identity: {
        markerOf: (widget) => widget.marker,
        isOwnCreate: async (mr, widget, ctx) =>
          widget.name === cloudName(mr) && widget.marker === ctx.ownerMarker.value,
      },
      create: async (mr, ctx) => {
        this.calls.push({ op: 'create' });
        const failure = this.failNextCreate;
        this.failNextCreate = undefined;
        if (failure) {
          // It took its time before failing, as a timed-out request does.
          await this.duringCreate?.();
          throw failure;
        }
        const widget = this.put({
          name: cloudName(mr),
          size: mr.spec.size ?? 1,
          spot: mr.spec.spot ?? false,
          // As the real cloud: a create request carries no paused, so what it makes runs.
          status: 'RUNNING',
          marker: ctx.ownerMarker.value,
          org,
        });
        await this.duringCreate?.();
        if (this.createDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.createDelayMs));
        return widget;
      },
      metering: {
        demand: async ({ spec }) => ({
          gpus: { types: ['W1'], count: spec.size ?? 1 },
          live: spec.paused !== true,
          perHour: async () => (spec.size ?? 1) * WIDGET_PRICE_PER_HOUR,
        }),
        heldGpus: (widget) => (widget.status === 'RUNNING' ? widget.size : 0),
        priceOf: async (widget) => (widget.status === 'RUNNING' ? widget.size * WIDGET_PRICE_PER_HOUR : 0),
      },
      plan: async (mr, widget) => {
        const want = mr.spec.paused;
        if (want === true && widget.status === 'RUNNING') {
          return step('Pausing', `pausing widget ${widget.id}`, () =>
            this.#set(widget.id, 'PAUSED', 'pause'),
          );
        }
        if (want === false && widget.status === 'PAUSED') {
          return step('Resuming', `resuming widget ${widget.id}`, () =>
            this.#set(widget.id, 'RUNNING', 'resume'),
          );
        }
        return { kind: 'in-sync' };
      },
      lateInit: {
        from: (widget) => ({ paused: widget.status === 'PAUSED', size: widget.size }),
        cleared: { paused: false },
      },
      pause: {
        paused: (spec) => ({ ...spec, paused: true }),
        idle: {
          rule: (spec) =>
            spec.idleBelowPercent === undefined
              ? undefined
              : { belowPercent: spec.idleBelowPercent, forMinutes: 30 },
          calls: 1,
          applies: (widget) => widget.status === 'RUNNING',
          check: async (widget, rule) => {
            this.calls.push({ op: 'idle', id: widget.id });
            const used = this.utilization.get(widget.id);
            return used !== undefined && used < rule.belowPercent ? `at ${used}%` : undefined;
          },
        },
        shedding: {
          allowed: (spec) => spec?.pauseOnBudget === true,
          utilization: (mr) => this.utilization.get(String(mr.status?.id)),
        },
      },
      deadline: {
        of: (spec) =>
          spec.deadlineSeconds === undefined
            ? undefined
            : { seconds: spec.deadlineSeconds, action: spec.deadlineAction ?? 'Pause' },
      },
      secrets: { connectionDetails: (status) => ({ id: String(status.id) }) },
      spot: {
        requested: (spec) => spec.spot === true,
        preempted: (widget) => widget.spot && widget.status === 'FAILED',
      },
      delete: async (id) => this.#set(id, 'TERMINATED', 'delete'),
      phaseOf: (widget) => widget.status,
      observe: (mr, widget) => ({
        phase: widget.status,
        readiness:
          widget.status === 'RUNNING'
            ? { ready: true, reason: 'Running', message: '' }
            : {
                ready: false,
                reason: widget.status === 'PAUSED' ? 'Paused' : 'NotRunning',
                message: widget.status,
              },
        status: { size: widget.size },
        drift: mr.spec.size !== undefined && mr.spec.size !== widget.size ? ['size'] : [],
      }),
    };
  }

  #set(id: string, status: WidgetStatus, op: string): void {
    this.calls.push({ op, id });
    const widget = this.objects.get(id);
    if (!widget) throw new ReconcileError('CloudNotFound', `no widget ${id}`, { terminal: false });
    widget.status = status;
  }
}

type Stored = ManagedObject<unknown>;

const notFound = (key: string) => new KubeApiError('PATCH', key, 404, 'NotFound', `${key} not found`);

/**
 * The apiserver as the reconciler sees it: objects by key with a resourceVersion, conditional writes,
 * finalizers that hold a deletion, and removal when the last one goes.
 */
export class FakeApi {
  readonly objects = new Map<string, Stored>();
  readonly secrets = new Map<string, { data: Record<string, string>; owner?: string | undefined }>();
  readonly writes: Array<{ key: string; what: string }> = [];
  /** Writes refused for a stale resourceVersion, as the apiserver answers them with 409. */
  readonly conflicts: Array<{ key: string; what: string }> = [];
  #version = 1;
  #uid = 1;
  /** Runs before each metadata patch is applied: a place to interleave another writer. */
  beforePatch: ((key: string, patch: ObjectPatch) => void) | undefined;
  /**
   * How many versions behind the informer's view is at each read of `store` (0: current), as an informer
   * lags behind the writes: a stale window the test sets. Reads through `get` are always current.
   */
  lag: () => number = () => 0;
  /** Every version each key went through, oldest first; `undefined` where it was removed. */
  readonly #history = new Map<string, Array<Stored | undefined>>();

  create(
    name: string,
    spec: Record<string, unknown>,
    metadata: Partial<Metadata> = {},
    namespace = 'ns-a',
  ): Stored {
    const obj: Stored = {
      apiVersion: 'test.gpucloud.io/v1',
      kind: 'Widget',
      metadata: {
        namespace,
        name,
        uid: `uid-${this.#uid++}`,
        creationTimestamp: new Date(Date.now() - 60_000).toISOString(),
        generation: 1,
        resourceVersion: String(this.#version++),
        ...metadata,
      },
      spec,
    };
    this.objects.set(keyOf(obj), obj);
    this.#remember(keyOf(obj));
    return structuredClone(obj);
  }

  get(key: string): Stored | undefined {
    const obj = this.objects.get(key);
    return obj && structuredClone(obj);
  }

  /** What `kubectl delete` does: a deletion held by finalizers, or the object gone. */
  delete(key: string): void {
    const obj = this.objects.get(key);
    if (!obj) return;
    if ((obj.metadata.finalizers ?? []).length === 0) {
      this.objects.delete(key);
      this.#remember(key);
      return;
    }
    obj.metadata.deletionTimestamp = new Date().toISOString();
    this.#bump(obj);
  }

  /**
   * The apiserver removing an object whatever finalizers it holds, as a DELETE that read it before a
   * finalizer was added and committed after does (kubernetes/kubernetes#77988). Answers the state it
   * was removed in, as the watch's DELETED event carries it.
   */
  vanish(key: string): Stored {
    const obj = this.#must(key);
    this.objects.delete(key);
    this.#remember(key);
    return structuredClone(obj);
  }

  /** The user's merge patch of the spec: a new generation. */
  patchSpec(key: string, fields: Record<string, unknown>): void {
    const obj = this.#must(key);
    obj.spec = { ...(obj.spec as Record<string, unknown>), ...fields };
    obj.metadata.generation += 1;
    this.#bump(obj);
  }

  annotate(key: string, annotations: Record<string, string | null>): void {
    const obj = this.#must(key);
    obj.metadata.annotations = applied(obj.metadata.annotations, annotations);
    this.#bump(obj);
  }

  /** The status as another writer (an earlier operator) left it. */
  setStatus(key: string, status: Record<string, unknown>): void {
    const obj = this.#must(key);
    obj.status = status;
    this.#bump(obj);
  }

  readonly store: ManagedStore = {
    get: (key: ObjectKey) => this.#seen(`${key.namespace}/${key.name}`),
    claimsOn: (id: string): Claim[] =>
      [...this.objects.values()]
        .filter((obj) => obj.metadata.annotations?.[EXTERNAL_ID] === id || obj.status?.id === id)
        .map((obj) => ({
          key: { namespace: obj.metadata.namespace, name: obj.metadata.name },
          uid: obj.metadata.uid,
          account: accountOf(obj.spec),
          proved: obj.status?.id === id,
        })),
    isLive: (uid: string) =>
      [...this.objects.values()].some((obj) => obj.metadata.uid === uid && !obj.metadata.deletionTimestamp),
  };

  readonly writer: ManagedWriter = {
    patchObject: async (mr, patch) => {
      const key = keyOf(mr);
      this.beforePatch?.(key, patch);
      const obj = this.objects.get(key);
      if (!obj || obj.metadata.uid !== mr.metadata.uid) throw notFound(key);
      if (
        (patch.finalizers || patch.ifUnchanged) &&
        obj.metadata.resourceVersion !== mr.metadata.resourceVersion
      ) {
        this.conflicts.push({ key, what: 'metadata' });
        throw new KubeApiError('PATCH', key, 409, 'Conflict', 'the object has been modified');
      }
      if (patch.annotations) obj.metadata.annotations = applied(obj.metadata.annotations, patch.annotations);
      if (patch.finalizers) obj.metadata.finalizers = [...patch.finalizers];
      if (patch.spec) obj.spec = { ...(obj.spec as Record<string, unknown>), ...patch.spec };
      this.writes.push({ key, what: `metadata ${JSON.stringify(patch)}` });
      this.#bump(obj);
      if (obj.metadata.deletionTimestamp && (obj.metadata.finalizers ?? []).length === 0) {
        this.objects.delete(key);
        this.#remember(key);
      }
      return structuredClone(obj.metadata);
    },
    isOwnWrite: () => false,
    forget: () => {},
    size: 0,
    patchStatus: async (mr, status) => {
      const key = keyOf(mr);
      const obj = this.objects.get(key);
      if (!obj || obj.metadata.uid !== mr.metadata.uid) throw notFound(key);
      if (obj.metadata.resourceVersion !== mr.metadata.resourceVersion) {
        this.conflicts.push({ key, what: 'status' });
        throw new KubeApiError('PATCH', key, 409, 'Conflict', 'the object has been modified');
      }
      obj.status = structuredClone(status);
      this.writes.push({ key, what: 'status' });
      this.#bump(obj);
      return obj.metadata.resourceVersion;
    },
    deleteObject: async (mr) => this.delete(keyOf(mr)),
    readSecret: async (namespace, name) => this.secrets.get(`${namespace}/${name}`)?.data,
    writeOwnedSecret: async (mr, name, data) => {
      const key = `${mr.metadata.namespace}/${name}`;
      const existing = this.secrets.get(key);
      if (existing && existing.owner !== mr.metadata.uid) return 'not-owned';
      this.secrets.set(key, { data: { ...data }, owner: mr.metadata.uid });
      return 'written';
    },
  };

  #must(key: string): Stored {
    const obj = this.objects.get(key);
    if (!obj) throw new Error(`no ${key}`);
    return obj;
  }

  #bump(obj: Stored): void {
    obj.metadata.resourceVersion = String(this.#version++);
    this.#remember(keyOf(obj));
  }

  #remember(key: string): void {
    const versions = this.#history.get(key) ?? [];
    const obj = this.objects.get(key);
    versions.push(obj && structuredClone(obj));
    // A window of a few versions is all a lag reaches back.
    if (versions.length > 8) versions.shift();
    this.#history.set(key, versions);
  }

  /** The key as the informer shows it now: `lag()` versions behind the latest, at most as far as it knows. */
  #seen(key: string): Stored | undefined {
    const versions = this.#history.get(key);
    const lag = this.lag();
    if (lag <= 0 || !versions || versions.length === 0) return this.get(key);
    const back = Math.min(lag, versions.length - 1);
    const seen = versions[versions.length - 1 - back];
    return seen && structuredClone(seen);
  }
}

function applied(
  current: Record<string, string> | undefined,
  patch: Record<string, string | null>,
): Record<string, string> {
  const next = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key];
    else next[key] = value;
  }
  return next;
}

export interface Recorded {
  events: Array<{ key: string; type: string; reason: string; message: string }>;
  fleet: string[];
}

/** The Synced or Ready condition of a stored object. */
export function conditionOf(obj: Stored | undefined, type: string) {
  return obj?.status?.conditions?.find((condition) => condition.type === type);
}
