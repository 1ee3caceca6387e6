import { createHmac, timingSafeEqual } from 'node:crypto';
import { GpuCloudError } from '../../api/errors.ts';
import type { Clock } from '../../lib/clock.ts';
import type { CloudCache } from '../cloud-cache/cloud-cache.ts';
import {
  CREATE_INTENT,
  CREATE_NAME,
  CREATE_PLACEMENT,
  EXTERNAL_ID,
  FINALIZER,
  LATE_INITIALIZED,
} from '../core/annotations.ts';
import { isConflict, isNotFound, ReconcileError, StaleCopyError } from '../core/errors.ts';
import type { EventSink } from '../core/event-sink.ts';
import {
  type ActContext,
  cloudName,
  type ExternalKind,
  keyOf,
  type ManagedObject,
} from '../core/external-kind.ts';
import { NotLeaderError } from '../core/fence.ts';
import { type PlacementStatus, placementStatusSchema } from '../core/status-schema.ts';
import type { ManagedStore } from '../core/store.ts';
import type { ManagedWriter, Metadata, ObjectPatch } from '../core/writer.ts';
import { type Attempt, describeOffer, isNoCapacity, type Placer } from './placement.ts';

export interface CreationOptions {
  /**
   * How long after a create intent another process's create may still land in the cloud. A search for
   * an interrupted create only trusts lists that started after this grace.
   */
  graceMs: number;
  /** Clock skew tolerated between the cloud's `createdAt` and ours. */
  skewMs: number;
  /**
   * Keys that sign the create intents this operator writes: the first signs, any verifies (so an intent
   * written just before a key rotation still counts). An intent without a valid signature was written
   * by hand and is ignored: it must never send the operator searching for somebody else's object.
   */
  intentKeys(): readonly string[];
  clock: Clock;
  /** Kinds the operator places: chooses the offer each create is sent for. */
  placer?: Placer<unknown, unknown> | undefined;
  /** Where a move to the next offer is told. */
  events: EventSink;
}

/**
 * The answer of `obtain`: the cloud object and the spec fields written with its id (undefined when late
 * initialisation did not run with it), or how long to wait before the search can be trusted.
 */
export type Obtained<Cloud> =
  | ({ kind: 'have'; cloud: Cloud; created: boolean } & Recorded)
  | { kind: 'wait'; ms: number };

/**
 * What recording an id wrote: the metadata as stored, the status as the turn left it (a placement written
 * with the intent), and the spec fields filled with it.
 */
export interface Recorded {
  metadata: Metadata;
  status: ManagedObject<unknown>['status'];
  filled: Record<string, unknown> | undefined;
}

/** The spec fields to fill from the object a create made or found (late initialisation). */
export type SpecFill<Cloud> = (cloud: Cloud) => Record<string, unknown>;

interface Intent<Cloud> {
  at: number;
  /** A create was sent and its outcome is unknown (timeout, 5xx): the cloud may hold the object. */
  ambiguousSince?: number;
  /** The create succeeded but recording its id failed: record this one, never create again. */
  created?: Cloud;
  /** The cloud refused the create for lack of room: nothing was made, and this offer is ruled out. */
  refused?: Attempt;
}

/**
 * Crash-safe creation. The intent is persisted on the custom resource before the create call, and the id
 * right after it. Whoever finds an intent without an id — a restarted process, or this one after an
 * ambiguous failure — first searches the cloud for what that create made, and adopts it instead of
 * creating a second, billed resource. Only intents this process wrote itself, with no create sent since,
 * skip the search: nobody else can have acted on them.
 */
export class Creation<Spec extends { name?: string | undefined }, Cloud> {
  readonly #adapter: ExternalKind<Spec, Cloud>;
  readonly #cache: CloudCache<Cloud>;
  readonly #store: ManagedStore;
  readonly #writer: ManagedWriter;
  readonly #options: CreationOptions;
  /** Intents written by this process, keyed by custom-resource uid. */
  readonly #intents = new Map<string, Intent<Cloud>>();
  /** The ids this process recorded for what it created or recovered, by uid: the resource's own. */
  readonly #recorded = new Map<string, string>();
  /**
   * The resource (`namespace/name`) each object this process made is for, by cloud id, from the moment the
   * create answers: until the informer shows the id on the resource, a change of the object would wake
   * nobody, and the resource would stay at the state it was created in until its resync.
   */
  readonly #madeFor = new Map<string, string>();
  /** The last object made for each resource, by uid: one entry in `#madeFor` per resource. */
  readonly #lastMade = new Map<string, string>();
  constructor(
    adapter: ExternalKind<Spec, Cloud>,
    cache: CloudCache<Cloud>,
    store: ManagedStore,
    writer: ManagedWriter,
    options: CreationOptions,
  ) {
    this.#adapter = adapter;
    this.#cache = cache;
    this.#store = store;
    this.#writer = writer;
    this.#options = options;
  }

  /**
   * Whether `obtain` starts by writing a create intent for `mr`. That write also adds the finalizer if it
   * is missing, so a new resource costs one metadata write before its create, not two.
   */
  writesIntent(mr: ManagedObject<Spec>): boolean {
    return this.intentAt(mr) === undefined;
  }

  /**
   * When the create intent on `mr` was written, or undefined when it holds none an operator could have
   * written: absent, not a number, or later than clock skew allows — a date set by hand far ahead would
   * otherwise be waited for until it comes.
   */
  intentAt(mr: ManagedObject<unknown>): number | undefined {
    const annotations = mr.metadata.annotations ?? {};
    const [written = '', seal] = (annotations[CREATE_INTENT] ?? '').split('.');
    const at = Number(written);
    if (written === '' || Number.isNaN(at) || at > this.#options.clock.now() + this.#options.skewMs)
      return undefined;
    if (seal === undefined) return undefined;
    const name = annotations[CREATE_NAME] ?? '';
    const placement = annotations[CREATE_PLACEMENT] ?? '';
    const sealed = this.#options
      .intentKeys()
      .some((key) => sameText(seal, sealIntent(key, mr.metadata.uid, at, name, placement)));
    return sealed ? at : undefined;
  }

  /**
   * Finds what an earlier create made for `mr`, or creates it, and records the id on `mr` — with the spec
   * fields `fill` names, in the same write.
   */
  async obtain(mr: ManagedObject<Spec>, ctx: ActContext, fill?: SpecFill<Cloud>): Promise<Obtained<Cloud>> {
    const intentAt = this.intentAt(mr);
    if (intentAt === undefined) return this.#createPlaced(mr, ctx, fill, await this.#place(mr, []));
    const found = await this.find(mr, intentAt, ctx);
    if (found.kind === 'wait') return found;
    if (found.cloud) {
      const recorded = await this.record(mr, found.cloud, fill);
      return { kind: 'have', cloud: found.cloud, created: false, ...recorded };
    }
    // Nothing was made: this create is a new one, and its intent must name it as it is sent now (the
    // resource may have been renamed since the old intent), or a search after a lost answer would miss it.
    // It goes to the intent's offer unless the cloud refused that one here: a create that may have been
    // sent is never repeated on another offer.
    const refused = this.#intents.get(mr.metadata.uid)?.refused;
    const placement = refused ? undefined : placementIn(mr);
    return this.#createPlaced(mr, ctx, fill, placement ?? (await this.#place(mr, refused ? [refused] : [])));
  }

  async #place(mr: ManagedObject<Spec>, tried: readonly Attempt[]): Promise<PlacementStatus | undefined> {
    const placer = this.#options.placer;
    return placer?.requested(mr) ? placer.choose(mr, tried) : undefined;
  }

  /**
   * Creates on `placement` (none: the spec names everything), moving to the next offer each time the cloud
   * refuses one for lack of room — which proves nothing was made — until the placer has none left.
   */
  async #createPlaced(
    mr: ManagedObject<Spec>,
    ctx: ActContext,
    fill: SpecFill<Cloud> | undefined,
    placement: PlacementStatus | undefined,
  ): Promise<Obtained<Cloud>> {
    let written = await this.#writeIntent(mr, placement);
    for (;;) {
      try {
        return await this.#create(written, ctx, fill);
      } catch (error) {
        const { placer } = this.#options;
        const placed = written.status?.placement;
        if (!placer || !placed || !isNoCapacity(error)) throw error;
        const refused = placer.refused(placed);
        const intent = this.#intents.get(mr.metadata.uid);
        if (intent) intent.refused = refused;
        const next = await placer.choose(written, [refused]);
        this.#options.events.event(
          mr,
          'Normal',
          'PlacementMoved',
          `${describeOffer(placed)} has no room (the cloud answered 12002); trying ${describeOffer(next)}`,
        );
        written = await this.#writeIntent(written, next);
      }
    }
  }

  /**
   * Searches the cloud for an object an interrupted create for `mr` made. Resolves `undefined` when there
   * is provably none, or asks the caller to wait until a list can prove it.
   */
  async find(
    mr: ManagedObject<Spec>,
    intentAt: number,
    ctx: ActContext,
  ): Promise<{ kind: 'found'; cloud: Cloud | undefined } | { kind: 'wait'; ms: number }> {
    const own = this.#intents.get(mr.metadata.uid);
    if (own?.at === intentAt && own.created !== undefined) return { kind: 'found', cloud: own.created };
    if (own?.at === intentAt && own.ambiguousSince === undefined) return { kind: 'found', cloud: undefined };
    // An id the client chose names the object: one get finds it, and no grace is needed, since the cloud
    // refuses a second object under that id, however late the first create lands.
    const ownId = this.#adapter.identity?.ownId?.(mr);
    if (ownId !== undefined) return { kind: 'found', cloud: await this.#adapter.get(ownId) };
    // This process wrote a later intent than the copy shows: the copy is stale, and the grace of the
    // intent it shows is nobody's to wait for. Past our own grace the informer has had time to catch up,
    // so an older intent still shown is taken as written (by hand) and searched as anyone's.
    const now = this.#options.clock.now();
    if (own !== undefined && own.at > intentAt && now < own.at + this.#options.graceMs) {
      throw new StaleCopyError(`the copy read shows the intent of ${intentAt}, this process wrote ${own.at}`);
    }
    // A create another process sent may land up to a grace after its intent; ours, until we gave up.
    const settledAt = own?.ambiguousSince ?? intentAt + this.#options.graceMs;
    const wait = settledAt - now;
    if (wait > 0) return { kind: 'wait', ms: wait };
    // Only a list that starts now can show everything that landed: an older one may predate it.
    await this.#cache.waitForListAfter(this.#options.clock.now());
    for (const cloud of this.#cache.objects()) {
      if (await this.#isCandidate(mr, cloud, intentAt, ctx)) return { kind: 'found', cloud };
    }
    return { kind: 'found', cloud: undefined };
  }

  /**
   * Records the cloud id on the custom resource and retires the intent, with the spec fields `fill` names;
   * answers those fields, or undefined when they could not go with the id. The fields are written only to
   * the version read, lest a user's value set meanwhile be overwritten; the id is written in any case.
   */
  async record(mr: ManagedObject<Spec>, cloud: Cloud, fill?: SpecFill<Cloud>): Promise<Recorded> {
    try {
      return await this.#record(mr, cloud, fill);
    } catch (error) {
      if (isNotFound(error)) return this.#abandon(mr, cloud, error);
      throw error;
    }
  }

  async #record(mr: ManagedObject<Spec>, cloud: Cloud, fill?: SpecFill<Cloud>): Promise<Recorded> {
    const id = this.#adapter.idOf(cloud);
    const annotations = {
      [EXTERNAL_ID]: id,
      [CREATE_INTENT]: null,
      [CREATE_NAME]: null,
      [CREATE_PLACEMENT]: null,
    };
    const spec = fill?.(cloud);
    let recorded: Recorded | undefined;
    if (spec && Object.keys(spec).length > 0) {
      try {
        const metadata = await this.#writer.patchObject(mr, {
          annotations: { ...annotations, [LATE_INITIALIZED]: Object.keys(spec).sort().join(',') },
          spec,
          ifUnchanged: true,
        });
        recorded = { metadata, status: mr.status, filled: spec };
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
    }
    recorded ??= {
      metadata: await this.#writer.patchObject(mr, { annotations }),
      status: mr.status,
      filled: spec && Object.keys(spec).length === 0 ? {} : undefined,
    };
    this.#intents.delete(mr.metadata.uid);
    this.#recorded.set(mr.metadata.uid, id);
    return recorded;
  }

  /** Whether this process recorded `id` for `uid` after creating (or recovering) it: no adoption. */
  recordedHere(uid: string, id: string): boolean {
    return this.#recorded.get(uid) === id;
  }

  /** The resource (`namespace/name`) this process made cloud object `id` for, if it did. */
  madeFor(id: string): string | undefined {
    return this.#madeFor.get(id);
  }

  #rememberMade(mr: ManagedObject<Spec>, id: string): void {
    const { uid } = mr.metadata;
    const before = this.#lastMade.get(uid);
    if (before !== undefined) this.#madeFor.delete(before);
    this.#lastMade.set(uid, id);
    this.#madeFor.set(id, keyOf(mr));
  }

  /** Resources it holds something for. */
  get size(): number {
    return Math.max(this.#intents.size, this.#recorded.size, this.#madeFor.size, this.#lastMade.size);
  }

  /** Drops what this process remembers of `mr` once it is gone. */
  forget(uid: string): void {
    this.#intents.delete(uid);
    this.#recorded.delete(uid);
    const made = this.#lastMade.get(uid);
    if (made !== undefined) this.#madeFor.delete(made);
    this.#lastMade.delete(uid);
  }

  /**
   * Writes the create intent, with the offer the create goes to when the operator placed it; that offer
   * is then recorded in status too, before the create is sent, so a user sees what is being tried.
   */
  async #writeIntent(mr: ManagedObject<Spec>, placement?: PlacementStatus): Promise<ManagedObject<Spec>> {
    const at = this.#options.clock.now();
    // Conditional: written from a stale read (the cache not yet showing an earlier intent or id), an
    // intent would lead to a second create; the conflict makes the next reconcile read afresh instead.
    const name = cloudName(mr);
    const offer = placement ? JSON.stringify(placement) : '';
    const [key = ''] = this.#options.intentKeys();
    const seal = sealIntent(key, mr.metadata.uid, at, name, offer);
    const patch: ObjectPatch = {
      annotations: {
        [CREATE_INTENT]: `${at}.${seal}`,
        [CREATE_NAME]: name,
        [CREATE_PLACEMENT]: offer || null,
      },
      ifUnchanged: true,
    };
    const finalizers = mr.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER)) patch.finalizers = [...finalizers, FINALIZER];
    const metadata = await this.#writer.patchObject(mr, patch);
    this.#intents.set(mr.metadata.uid, { at });
    if (!placement) return { ...mr, metadata };
    const status = { ...mr.status, placement };
    const resourceVersion = await this.#writer.patchStatus({ ...mr, metadata }, status);
    return { ...mr, metadata: { ...metadata, resourceVersion }, status };
  }

  async #create(mr: ManagedObject<Spec>, ctx: ActContext, fill?: SpecFill<Cloud>): Promise<Obtained<Cloud>> {
    let cloud: Cloud;
    try {
      cloud = await this.#adapter.create(mr, ctx);
    } catch (error) {
      this.#markAmbiguous(mr, error);
      throw error;
    }
    this.#rememberMade(mr, this.#adapter.idOf(cloud));
    this.#cache.remember(cloud);
    const intent = this.#intents.get(mr.metadata.uid);
    if (intent) intent.created = cloud;
    const recorded = await this.record(mr, cloud, fill);
    return { kind: 'have', cloud, created: true, ...recorded };
  }

  /**
   * The resource `cloud` was made or found for is gone from the apiserver, so nobody will ever hold it:
   * this process, the only one that knows its id, deletes it rather than walk away from a billed object.
   */
  async #abandon(mr: ManagedObject<Spec>, cloud: Cloud, cause: unknown): Promise<never> {
    const id = this.#adapter.idOf(cloud);
    this.forget(mr.metadata.uid);
    const remove = this.#adapter.delete;
    if (remove && !this.#adapter.isGone(cloud)) await remove(id);
    this.#cache.requestRefresh();
    throw new ReconcileError(
      'ResourceGone',
      `the resource was deleted while ${this.#adapter.kind} ${id} was made for it; ${remove ? `deleted ${id} in the cloud` : `${id} is left to finish`}`,
      { terminal: false, cause },
    );
  }

  #markAmbiguous(mr: ManagedObject<Spec>, error: unknown): void {
    // Only the client's own verdict proves a create did not happen, or our own refusal before anything
    // was sent (a missing Secret, a deposed leader); any other failure might have let it happen.
    if (error instanceof ReconcileError || error instanceof NotLeaderError) return;
    if (error instanceof GpuCloudError && !error.mayHaveTakenEffect) return;
    const intent = this.#intents.get(mr.metadata.uid);
    if (intent) intent.ambiguousSince = this.#options.clock.now();
  }

  async #isCandidate(
    mr: ManagedObject<Spec>,
    cloud: Cloud,
    intentAt: number,
    ctx: ActContext,
  ): Promise<boolean> {
    const adapter = this.#adapter;
    if (adapter.isGone(cloud)) return false;
    const made = Date.parse(mr.metadata.creationTimestamp ?? '');
    const notBefore = Math.max(intentAt, Number.isNaN(made) ? intentAt : made) - this.#options.skewMs;
    if (adapter.createdAtOf(cloud) < notBefore) return false;
    const uid = mr.metadata.uid;
    // Only a claim the operator proved excludes it: anyone may name an id by hand, and a foreign name on
    // what this resource's own create made must not send it into a second create.
    if (this.#store.claimsOn(adapter.idOf(cloud)).some((claim) => claim.uid !== uid && claim.proved)) {
      return false;
    }
    const { identity } = adapter;
    const marker = identity?.markerOf?.(cloud);
    if (marker !== undefined && marker !== uid) return false;
    return (await identity?.isOwnCreate(mr, cloud, ctx)) ?? false;
  }
}

/**
 * The signature of a create intent: a keyed hash of what the intent promises (which resource, when, under
 * which cloud name), so that only the operator, which holds the key, can write one that counts.
 */
export function sealIntent(key: string, uid: string, at: number, name: string, placement = ''): string {
  const promised = `${uid}\n${at}\n${name}${placement ? `\n${placement}` : ''}`;
  return createHmac('sha256', key).update(promised).digest('base64url').slice(0, 22);
}

/** The offer a verified intent's create went to; undefined when it names none or does not parse. */
function placementIn(mr: ManagedObject<unknown>): PlacementStatus | undefined {
  const text = mr.metadata.annotations?.[CREATE_PLACEMENT];
  if (!text) return undefined;
  try {
    const parsed = placementStatusSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
