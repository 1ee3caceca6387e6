import type { GpuCloudClient } from '../../api/client.ts';
import { ChannelSource } from '../../controller/channel-source.ts';
import type { Manager } from '../../controller/manager.ts';
import {
  annotationsChanged,
  anyOf,
  deletionChanged,
  generationChanged,
} from '../../controller/predicates.ts';
import { type EventSource, objectsOf } from '../../controller/source.ts';
import { keyFromString, type ObjectKey } from '../../kube/object.ts';
import type { ResourceType } from '../../kube/resource-type.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import { type AccountLinkSettings, AccountLinks, type AccountMetering } from '../accounts/account-links.ts';
import type { AccountDirectory } from '../accounts/accounts.ts';
import { BOOKKEEPING } from '../core/annotations.ts';
import type { CommonSpec, ExternalKind, ManagedObject } from '../core/external-kind.ts';
import type { FleetMetrics, FleetResource, Usage } from '../core/fleet-metrics.ts';
import { managedStore, parseManaged } from '../core/store.ts';
import { managedWriter } from '../core/writer.ts';
import { SecretWatch } from '../secrets/secret-watch.ts';
import { ManagedReconciler } from './reconciler.ts';
import { TurnCopies } from './turn-copies.ts';

/** One kind of managed resource: where it lives, how its spec parses, and its cloud adapter. */
export interface ManagedKind<Spec extends CommonSpec, Cloud> {
  readonly resource: ResourceType;
  /** Other kinds its resources refer to (a task's endpoint): read through `Peers`. */
  readonly references?: readonly ResourceType[];
  /** The kind's adapter on one account's client. */
  adapterFor(client: GpuCloudClient, peers: Peers, clock: Clock): ExternalKind<Spec, Cloud>;
  parseSpec(raw: unknown): Spec;
  /** What a resource holds and costs, for the fleet gauges. */
  readonly usage?: ((resource: FleetResource) => Usage) | undefined;
}

/** Resources of the kinds a kind refers to, read from the operator's informer caches: never a call. */
export interface Peers {
  get(resource: ResourceType, key: ObjectKey): ManagedObject<unknown> | undefined;
}

export interface ManagedControllerSettings extends AccountLinkSettings {
  /** Watch these namespaces; all when empty. */
  readonly namespaces: readonly string[];
  readonly concurrency: number;
  /** Re-deliver every custom resource this often, a guard against anything missed. */
  readonly resyncPeriodMs: number;
  readonly verifyAfterMs: number;
  /** Secrets resources read are read again this often: how soon a rotation is noticed. */
  readonly secretRecheckMs: number;
  /** The cloud accounts resources may name. */
  readonly accounts: AccountDirectory;
  /** The fleet gauges and event counters every kind reports to. */
  readonly fleet: FleetMetrics;
  /** Shared by every kind: opens each GPU-holding kind's link to an account any kind uses. */
  readonly metering: AccountMetering;
  readonly clock: Clock;
}

/** Adds one kind's controller to a manager: what a kind's registration hands the operator. */
export type AddController = (
  manager: Manager,
  settings: ManagedControllerSettings,
  logger: Logger,
) => ManagedHandle;

/** What the operator keeps of a kind's controller once it is registered. */
export interface ManagedHandle {
  /** A callback says cloud object `id` is now in `phase`: look soon, unless that is known already. */
  hint(id: string, phase: string): void;
}

/**
 * Registers one kind with the manager: the custom resources' informer and the cloud cache feed one work
 * queue (one cloud cache per account the kind's resources use); the generic reconciler does the rest. Custom-resource updates wake a reconcile only when the
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
  const { resource } = kind;
  const log = logger.child({ kind: resource.kind });
  // One informer per watched namespace, or one for the whole cluster.
  const scopes = settings.namespaces.length > 0 ? settings.namespaces : [''];
  const informersOf = (watched: ResourceType) =>
    scopes.map((namespace) =>
      manager.informer({ resource: watched, namespace, resyncPeriodMs: settings.resyncPeriodMs }),
    );
  const informers = informersOf(resource);
  const store = managedStore(informers.map((informer) => informer.store));
  const referenced = new Map((kind.references ?? []).map((peer) => [peer.plural, informersOf(peer)]));
  const peers: Peers = {
    get: (peer, key) =>
      parseManaged(
        referenced
          .get(peer.plural)
          ?.map((informer) => informer.store.get(key))
          .find((obj) => obj !== undefined),
      ),
  };
  const wake = new ChannelSource();
  const turns = new TurnCopies(managedWriter(manager.client, resource), {
    kind: resource.kind,
    mayAct: () => manager.mayAct(),
  });
  const { writer } = turns;
  const links = new AccountLinks({
    adapterFor: (client) => kind.adapterFor(client, peers, settings.clock),
    accounts: settings.accounts,
    store,
    writer,
    settings,
    mayAct: () => manager.mayAct(),
    wake: (id) => {
      for (const claim of store.claimsOn(id)) wake.emit(claim.key);
    },
    wakeKey: (key) => wake.emit(keyFromString(key)),
    // Kinds that hold something (a usage) count toward the account's limits; tasks hold nothing.
    metering: kind.usage ? settings.metering : undefined,
    events: manager.events,
    clock: settings.clock,
    log,
  });
  const fleet = settings.fleet.add({
    kind: resource.kind,
    *resources() {
      for (const informer of informers) yield* informer.store.values();
    },
    usage: kind.usage,
    // Read at scrape time, once the reconciler below exists.
    remembered: () => reconciler.remembered(),
  });
  const secrets = new SecretWatch({
    read: (namespace, name) => writer.readSecret(namespace, name),
    wake: (key) => wake.emit(keyFromString(key)),
    intervalMs: settings.secretRecheckMs,
    log,
  });
  const reconciler = new ManagedReconciler({
    kind: resource.kind,
    parseSpec: kind.parseSpec,
    store,
    writer,
    turns,
    events: manager.events,
    links,
    fleet,
    verifyAfterMs: settings.verifyAfterMs,
    secrets,
    clock: settings.clock,
    log,
  });
  // Only while the controller runs (on the leader): a standby would keep every deletion's last state and
  // never finalize it. The key the same event enqueues is reconciled after every handler has run.
  const vanishedSource: EventSource = {
    hasSynced: () => true,
    start() {
      const stops = informers.map((informer) =>
        informer.addEventHandler({
          onDelete: (obj, finalState) => {
            const mr = parseManagedOrUndefined(obj);
            if (mr) reconciler.vanished(mr, finalState);
          },
        }),
      );
      return () => {
        for (const stop of stops) stop();
      };
    },
  };
  const relevantChange = anyOf(generationChanged, annotationsChanged(BOOKKEEPING), deletionChanged);
  const cloudSource: EventSource = {
    hasSynced: () => true,
    start(enqueue) {
      const stopWaking = wake.start(enqueue);
      links.start();
      const stopSecrets = secrets.start();
      // A refusal may rest on the account (adoption, namespaces, guardrails, the key): its change wakes them.
      const stopAccounts = links.onAccountChange((account) => {
        for (const key of reconciler.refusedOn(account)) wake.emit(keyFromString(key));
      });
      return () => {
        stopWaking();
        stopAccounts();
        stopSecrets();
        links.stop();
      };
    },
  };
  manager.addController({
    name: resource.kind.toLowerCase(),
    sources: [
      ...informers.map((informer) =>
        objectsOf(informer, {
          updatePredicate: (oldObj, newObj) => {
            const own = writer.isOwnWrite(
              oldObj.metadata.resourceVersion ?? '',
              newObj.metadata.resourceVersion ?? '',
            );
            // A turn put off for a copy older than this process's own write goes on once the write shows.
            return turns.caughtUp(newObj) || (!own && relevantChange(oldObj, newObj));
          },
        }),
      ),
      vanishedSource,
      cloudSource,
    ],
    reconcile: (key, ctx) => reconciler.reconcile(key, ctx.signal),
    maxConcurrentReconciles: settings.concurrency,
  });
  return { hint: (id, phase) => links.hint(id, phase) };
}

/** A deleted object's last state as a managed resource; a malformed one is nothing to finalize. */
function parseManagedOrUndefined(
  obj: Parameters<typeof parseManaged>[0],
): ManagedObject<unknown> | undefined {
  try {
    return parseManaged(obj);
  } catch {
    return undefined;
  }
}
