import { hostname } from 'node:os';
import { z } from 'zod';
import type { Logger } from '../lib/logger.ts';
import { TokenBucket } from '../lib/token-bucket.ts';
import { isStatus, type KubeClient } from './client.ts';
import { type DeepReadonly, type KubeObject, kubeObjectSchema } from './object.ts';
import { collectionPath, coreEvents, objectPath } from './resource-type.ts';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorderOptions {
  readonly client: KubeClient;
  /** Who reports, e.g. `gpucloud-operator`: the `From` column of `kubectl describe`. */
  readonly component: string;
  /** Which replica reports; defaults to the hostname (the pod name in a pod). */
  readonly instance?: string;
  readonly logger: Logger;
  /** Events one object may emit at once (client-go: 25) ... */
  readonly burstPerObject?: number;
  /** ... and how often it earns one more afterwards (client-go: every 5 minutes). */
  readonly refillIntervalMs?: number;
  /**
   * Normal events all objects together may emit per second (default 5, bursts of 25); Warnings are never
   * held back by it. A burst of thousands of creates would otherwise double the apiserver's writes with
   * one "Created" event each, for what every status already says.
   */
  readonly normalPerSecond?: number;
  /** Distinct event series and objects remembered for aggregation and rate limiting. */
  readonly cacheSize?: number;
  /** Events waiting to be written; beyond it new ones are dropped (client-go: 1000). */
  readonly maxQueued?: number;
  /** Concurrent writes (client-go writes one event at a time). */
  readonly writers?: number;
  /** Told of every event dropped, and why. */
  readonly onDropped?: (cause: EventDropCause) => void;
}

/** Why an event was not written: its object's rate limit, or a full queue. */
export type EventDropCause = 'rate_limited' | 'queue_full';

/** The event's `involvedObject`: `kubectl describe` finds events by it. */
interface ObjectReference {
  readonly apiVersion: string;
  readonly kind: string;
  /** `''` for a cluster-scoped object. */
  readonly namespace: string;
  readonly name: string;
  readonly uid: string | undefined;
  readonly resourceVersion: string | undefined;
}

/** One repeated event: one Kubernetes Event whose `count` grows. */
interface Series {
  readonly reference: ObjectReference;
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
  readonly firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  /** Name of the Event once created. */
  name: string | undefined;
  /** Occurrences not written yet. */
  unwritten: boolean;
  /** Queued or being written: a repeat now coalesces into that write. */
  pending: boolean;
}

const MAX_MESSAGE_LENGTH = 1024;
const ignoredBody = z.unknown();

/**
 * Records core/v1 Events (the ones `kubectl describe` lists for any kind, custom resources
 * included), like client-go's legacy recorder:
 * - a repeat of the same (object, type, reason, message) updates one Event's `count` and
 *   `lastTimestamp` instead of creating another;
 * - each object has a token bucket, so a resource failing in a loop cannot flood the apiserver;
 * - writes happen in the background, a few at a time from a bounded queue, and never throw; failures
 *   are logged. Events are best effort: under a burst (thousands of resources created at once) the
 *   queue fills and further events are dropped and counted, rather than competing with the
 *   reconciles for the apiserver or holding memory without bound.
 * Messages must not contain secrets: they are stored in the cluster as given.
 */
export class EventRecorder {
  readonly #client: KubeClient;
  readonly #component: string;
  readonly #instance: string;
  readonly #log: Logger;
  readonly #burst: number;
  readonly #refillPerSecond: number;
  readonly #cacheSize: number;
  readonly #maxQueued: number;
  readonly #writers: number;
  readonly #onDropped: (cause: EventDropCause) => void;
  readonly #queue: Series[] = [];
  readonly #series = new Map<string, Series>();
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #normal: TokenBucket;
  readonly #inFlight = new Set<Promise<void>>();
  #sequence = 0;

  constructor(options: EventRecorderOptions) {
    this.#client = options.client;
    this.#component = options.component;
    this.#instance = options.instance ?? hostname();
    this.#log = options.logger.child({ component: 'event-recorder' });
    this.#burst = options.burstPerObject ?? 25;
    this.#refillPerSecond = 1000 / (options.refillIntervalMs ?? 300_000);
    this.#cacheSize = options.cacheSize ?? 4096;
    this.#maxQueued = options.maxQueued ?? 1000;
    this.#writers = options.writers ?? 2;
    this.#onDropped = options.onDropped ?? (() => {});
    const normalPerSecond = options.normalPerSecond ?? 5;
    this.#normal = new TokenBucket(normalPerSecond, normalPerSecond * 5);
  }

  /** Records an event about `obj`, which must carry apiVersion and kind (cached objects do). */
  event(obj: DeepReadonly<KubeObject>, type: EventType, reason: string, message: string): void {
    const reference = referenceTo(obj);
    if (!reference) {
      this.#log.warn({ reason, name: obj.metadata.name }, 'event dropped: the object has no apiVersion/kind');
      return;
    }
    const objectId = reference.uid ?? `${reference.kind}/${reference.namespace}/${reference.name}`;
    const text =
      message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH - 3)}...` : message;
    const key = [objectId, type, reason, text].join('\u0000');
    const known = this.#series.get(key);
    // Repeats fold into their series before any rate limit: one object failing the same way again and
    // again must not spend the tokens its other, new Warnings need.
    if (!known && (!this.#allow(objectId) || (type === 'Normal' && !this.#normal.tryTake()))) {
      this.#drop('rate_limited', reason, reference);
      return;
    }
    if (!known?.pending && this.#queue.length >= this.#maxQueued) {
      this.#drop('queue_full', reason, reference);
      return;
    }
    const now = timestamp();
    const series = remember(this.#series, key, this.#cacheSize, () => ({
      reference,
      type,
      reason,
      message: text,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 0,
      name: undefined,
      unwritten: false,
      pending: false,
    }));
    series.count++;
    series.lastTimestamp = now;
    series.unwritten = true;
    if (series.pending) return;
    series.pending = true;
    this.#queue.push(series);
    this.#startWriters();
  }

  /**
   * Forgets the series and rate limit of object `uid`, which is gone: nothing more is said of it. A series
   * still queued is written all the same.
   */
  forget(uid: string): void {
    this.#buckets.delete(uid);
    for (const [key, series] of this.#series) if (series.reference.uid === uid) this.#series.delete(key);
  }

  /** Distinct objects the recorder keeps a rate limit for. */
  get size(): number {
    return this.#buckets.size;
  }

  /** Resolves once every event recorded so far is written (or failed). */
  async flush(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
  }

  #allow(objectId: string): boolean {
    const bucket = remember(
      this.#buckets,
      objectId,
      this.#cacheSize,
      () => new TokenBucket(this.#refillPerSecond, this.#burst),
    );
    return bucket.tryTake();
  }

  #drop(cause: EventDropCause, reason: string, reference: ObjectReference): void {
    this.#onDropped(cause);
    this.#log.debug({ cause, reason, namespace: reference.namespace, name: reference.name }, 'event dropped');
  }

  #startWriters(): void {
    while (this.#inFlight.size < this.#writers && this.#queue.length > 0) {
      const writer = this.#drain().finally(() => {
        this.#inFlight.delete(writer);
        // An event queued after this writer's last look but before it ended found no free writer.
        this.#startWriters();
      });
      this.#inFlight.add(writer);
    }
  }

  /** One writer: takes queued series until none is left. */
  async #drain(): Promise<void> {
    for (let series = this.#queue.shift(); series; series = this.#queue.shift()) {
      await this.#writeSeries(series);
    }
  }

  /** Writes until no occurrence is left unwritten; repeats that arrive meanwhile coalesce. */
  async #writeSeries(series: Series): Promise<void> {
    try {
      while (series.unwritten) {
        series.unwritten = false;
        await this.#write(series);
      }
    } catch (err) {
      this.#log.warn({ err, reason: series.reason, name: series.reference.name }, 'could not record event');
    } finally {
      series.pending = false;
    }
  }

  async #write(series: Series): Promise<void> {
    if (series.name !== undefined) {
      try {
        await this.#client.request(ignoredBody, {
          method: 'PATCH',
          path: objectPath(coreEvents, { namespace: eventNamespace(series.reference), name: series.name }),
          body: { count: series.count, lastTimestamp: series.lastTimestamp },
        });
        return;
      } catch (err) {
        // Events expire (one hour by default); a new series starts then.
        if (!isStatus(err, 404)) throw err;
      }
    }
    const created = await this.#client.request(kubeObjectSchema, {
      method: 'POST',
      path: collectionPath(coreEvents, eventNamespace(series.reference)),
      body: this.#eventBody(series),
    });
    series.name = created.metadata.name;
  }

  #eventBody(series: Series) {
    const { reference } = series;
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: this.#eventName(reference.name), namespace: eventNamespace(reference) },
      involvedObject: {
        apiVersion: reference.apiVersion,
        kind: reference.kind,
        namespace: reference.namespace,
        name: reference.name,
        uid: reference.uid,
        resourceVersion: reference.resourceVersion,
      },
      type: series.type,
      reason: series.reason,
      message: series.message,
      count: series.count,
      firstTimestamp: series.firstTimestamp,
      lastTimestamp: series.lastTimestamp,
      source: { component: this.#component, host: this.#instance },
      reportingComponent: this.#component,
      reportingInstance: this.#instance,
    };
  }

  /** `<object>.<unique hex>` as client-go names them; unique even within one millisecond. */
  #eventName(objectName: string): string {
    this.#sequence = (this.#sequence + 1) % 1_000_000;
    const unique = (BigInt(Date.now()) * 1_000_000n + BigInt(this.#sequence)).toString(16);
    return `${objectName.slice(0, 253 - unique.length - 1)}.${unique}`;
  }
}

function referenceTo(obj: DeepReadonly<KubeObject>): ObjectReference | undefined {
  if (!obj.apiVersion || !obj.kind) return undefined;
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name,
    uid: obj.metadata.uid,
    resourceVersion: obj.metadata.resourceVersion,
  };
}

/** Events about cluster-scoped objects live in `default`, where client-go files them. */
function eventNamespace(reference: ObjectReference): string {
  return reference.namespace === '' ? 'default' : reference.namespace;
}

/** Gets or creates `key` in a map kept to `limit` entries, least recently used dropped first. */
function remember<V>(map: Map<string, V>, key: string, limit: number, create: () => V): V {
  const existing = map.get(key);
  map.delete(key);
  const value = existing ?? create();
  map.set(key, value);
  if (map.size > limit) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
  return value;
}

/** `metav1.Time`: RFC 3339 in whole seconds. */
function timestamp(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}
