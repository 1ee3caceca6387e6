import { ChannelSource } from '../controller/channel-source.ts';
import type { Manager } from '../controller/manager.ts';
import { annotationsChanged, anyOf, deletionChanged, generationChanged } from '../controller/predicates.ts';
import { type EventSource, objectsOf } from '../controller/source.ts';
import { keyFromString } from '../kube/object.ts';
import type { ResourceType } from '../kube/resource-type.ts';
import type { Logger } from '../lib/logger.ts';
import { BOOKKEEPING } from './annotations.ts';
import { CloudCache } from './cloud-cache.ts';
import type { CreationOptions } from './creation.ts';
import { DetailSchedule } from './detail-schedule.ts';
import type { CommonSpec, ExternalKind } from './external-kind.ts';
import { fencedAdapter } from './fence.ts';
import { ManagedReconciler } from './reconciler.ts';
import { managedStore } from './store.ts';
import { managedWriter } from './writer.ts';

/** One kind of managed resource: where it lives, how its spec parses, and its cloud adapter. */
export interface ManagedKind<Spec extends CommonSpec, Cloud> {
  readonly resource: ResourceType;
  readonly adapter: ExternalKind<Spec, Cloud>;
  parseSpec(raw: unknown): Spec;
}

export interface ManagedControllerSettings {
  /** Watch one namespace; all when empty. */
  readonly namespace: string;
  readonly concurrency: number;
  /** Steady-state interval of the cloud list. */
  readonly pollIntervalMs: number;
  /** Earliest a requested cloud list follows the previous one: bursts of requests share a list. */
  readonly refreshMinIntervalMs: number;
  /** Re-deliver every custom resource this often, a guard against anything missed. */
  readonly resyncPeriodMs: number;
  readonly detailsCallsPerSecond: number;
  readonly detailsIntervalMs: number;
  readonly verifyAfterMs: number;
  readonly creation: CreationOptions;
}

/** What the operator keeps of a kind's controller once it is registered. */
export interface ManagedHandle {
  /** A callback says cloud object `id` is now in `phase`: look soon, unless that is known already. */
  hint(id: string, phase: string): void;
}

/**
 * Registers one kind with the manager: the custom resources' informer and the cloud cache feed one work
 * queue; the generic reconciler does the rest. Custom-resource updates wake a reconcile only when the
 * spec, a user's annotations or deletion changed — never for the controller's own writes (status,
 * bookkeeping annotations, or a metadata patch the reconcile that made it carried on with). The cloud
 * cache and the details schedule run only while the controller runs, that is on the leader.
 */
export function addManagedController<Spec extends CommonSpec, Cloud>(
  manager: Manager,
  kind: ManagedKind<Spec, Cloud>,
  settings: ManagedControllerSettings,
  logger: Logger,
): ManagedHandle {
  const { resource, adapter } = kind;
  const log = logger.child({ kind: resource.kind });
  const informer = manager.informer({
    resource,
    namespace: settings.namespace,
    resyncPeriodMs: settings.resyncPeriodMs,
  });
  const store = managedStore(informer.store);
  const wake = new ChannelSource();
  const cache = new CloudCache(adapter, {
    intervalMs: settings.pollIntervalMs,
    minIntervalMs: settings.refreshMinIntervalMs,
    onChange: (id) => {
      for (const claim of store.claimsOn(id)) wake.emit(claim.key);
    },
    log,
  });
  const details =
    adapter.details &&
    new DetailSchedule({
      callsPerSecond: settings.detailsCallsPerSecond,
      callsPerFetch: adapter.details.calls,
      intervalMs: settings.detailsIntervalMs,
      enqueue: (key) => wake.emit(keyFromString(key)),
    });
  const writer = managedWriter(manager.client, resource);
  const reconciler = new ManagedReconciler({
    adapter: fencedAdapter(adapter, () => manager.mayAct()),
    parseSpec: kind.parseSpec,
    store,
    writer,
    events: manager.events,
    cache,
    details,
    creation: settings.creation,
    verifyAfterMs: settings.verifyAfterMs,
    log,
  });
  const relevantChange = anyOf(generationChanged, annotationsChanged(BOOKKEEPING), deletionChanged);
  const cloudSource: EventSource = {
    hasSynced: () => true,
    start(enqueue) {
      const stopWaking = wake.start(enqueue);
      cache.start();
      details?.start();
      return () => {
        stopWaking();
        cache.stop();
        details?.stop();
      };
    },
  };
  manager.addController({
    name: resource.kind.toLowerCase(),
    sources: [
      objectsOf(informer, {
        updatePredicate: (oldObj, newObj) =>
          !writer.isOwnWrite(oldObj.metadata.resourceVersion ?? '', newObj.metadata.resourceVersion ?? '') &&
          relevantChange(oldObj, newObj),
      }),
      cloudSource,
    ],
    reconcile: (key) => reconciler.reconcile(key),
    maxConcurrentReconciles: settings.concurrency,
  });
  return { hint: (id, phase) => cache.hint(id, phase) };
}
