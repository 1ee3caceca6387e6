// The one world the managed layer's unit tests run in: the real AccountLinks (cloud cache, creation,
// guardrails, schedules, metering), AccountRegistry and ManagedReconciler over the fakes (FakeCloud's
// widgets, FakeApi's apiserver). Options change what a test needs changed: the kind (`adapt`), the
// writer or the store in between, the accounts, and a world that stands still for tests that drive one
// account link a call at a time.

import { type Logger, pino } from 'pino';
import { Registry } from 'prom-client';
import { AccountLinks, AccountMetering } from '../../src/managed/accounts/account-links.ts';
import { AccountRegistry, makeAccount, RotatingKey } from '../../src/managed/accounts/account-registry.ts';
import type { AccountPolicy } from '../../src/managed/accounts/accounts.ts';
import type { EventSink } from '../../src/managed/core/event-sink.ts';
import { keyOf, type ManagedObject } from '../../src/managed/core/external-kind.ts';
import type { KindEvents } from '../../src/managed/core/fleet-metrics.ts';
import type { ManagedStore } from '../../src/managed/core/store.ts';
import type { ManagedWriter } from '../../src/managed/core/writer.ts';
import { ManagedReconciler } from '../../src/managed/reconciler/reconciler.ts';
import { TurnCopies } from '../../src/managed/reconciler/turn-copies.ts';
import { SecretWatch } from '../../src/managed/secrets/secret-watch.ts';
import { MovableClock } from '../support/clock.ts';
import {
  FakeApi,
  FakeCloud,
  type Kind,
  parseWidgetSpec,
  type Recorded,
  type Widget,
  type WidgetSpec,
} from './fakes.ts';
import { type SettleOptions, settleKey } from './settle.ts';

const API_URL = 'http://127.0.0.1:9/';

/** Account-link settings for the world: quick lists and graces, details on a wide budget. */
const FAST_LINKS = {
  pollIntervalMs: 10,
  refreshMinIntervalMs: 0,
  detailsCallsPerSecond: 100,
  detailsIntervalMs: 60_000,
  idleChecksPerSecond: 100,
  idleCheckIntervalMs: 60_000,
  creation: { graceMs: 30, skewMs: 1_000 },
} as const;

export interface WorldOptions {
  policy?: Partial<AccountPolicy>;
  signingKey?: string;
  /**
   * More accounts, each an organisation of its own (its key sees only its objects; `org` unless given is
   * its name). On the default account's API URL unless `url` says another (then it is another cloud).
   */
  others?: ReadonlyArray<{
    name: string;
    org?: string;
    url?: string;
    policy?: Partial<AccountPolicy>;
    /** Opened with the default account's key: another ProviderConfig of the same cloud account. */
    sameKey?: boolean;
  }>;
  /** The kind as the test needs it, made from the widget kind (what a widget is not: finite, no delete, ...). */
  adapt?: (base: Kind, cloud: FakeCloud) => Kind;
  /** Wraps the apiserver's writer (to fail or observe writes). */
  writer?: (base: ManagedWriter) => ManagedWriter;
  /** Wraps the informer's store (to answer stale copies). */
  store?: (base: ManagedStore) => ManagedStore;
  /** The reconciler's log (silent unless given). */
  log?: Logger;
  /** How often the cloud cache lists (FAST_LINKS' unless given). */
  pollIntervalMs?: number;
  /**
   * Nothing moves unless the test moves it: the clock stands, and the lists and schedules wait for
   * `start()` (or a schedule's own start). For tests that drive one account link a call at a time.
   */
  still?: boolean;
}

/** The reconciler of widgets on the fakes, with the real link pool and account registry. */
export function widgetWorld(options: WorldOptions = {}) {
  const cloud = new FakeCloud();
  /** Another GPU-holding kind (no resource of it in the cluster): its objects are in `gadgets`. */
  const gadgets = new FakeCloud();
  const api = new FakeApi();
  const recorded: Recorded = { events: [], fleet: [] };
  const events: EventSink = {
    event: (obj, type, reason, message) =>
      void recorded.events.push({ key: keyOf(obj), type, reason, message }),
    forget: () => {},
  };
  const log = pino({ level: 'silent' });
  const clientSettings = () => ({
    requestTimeoutMs: 1000,
    requestsPerSecond: 100,
    logger: log,
    registry: new Registry(),
  });
  const key = new RotatingKey(options.signingKey ?? 'signing-key', async () => 'signing-key');
  const policy: AccountPolicy = { allowsNamespace: () => true, adoption: true, ...options.policy };
  const account = makeAccount('default', API_URL, key, policy, clientSettings());
  const accounts = new AccountRegistry({ account, key });
  const orgs = new Map([[account.client, 'org-1']]);
  for (const other of options.others ?? []) {
    const text = other.sameKey ? key.current() : `${other.name}-key`;
    const otherKey = new RotatingKey(text, async () => text);
    const url = other.url ?? API_URL;
    const made = makeAccount(
      other.name,
      url,
      otherKey,
      { allowsNamespace: () => true, adoption: true, ...other.policy },
      clientSettings(),
      {},
      accounts.usageFor(url, text),
    );
    accounts.set(other.name, { account: made, key: otherKey });
    orgs.set(made.client, other.org ?? other.name);
  }
  const fleet: KindEvents = {
    becameReady: () => void recorded.fleet.push('ready'),
    drifted: () => void recorded.fleet.push('drifted'),
    preempted: () => void recorded.fleet.push('preempted'),
    refused: (reason) => void recorded.fleet.push(`refused ${reason}`),
    pausedByOperator: (reason) => void recorded.fleet.push(`paused ${reason}`),
    deadlineExceeded: (action) => void recorded.fleet.push(`deadline ${action}`),
  };
  const clock = new MovableClock({ flowing: options.still !== true });
  /** Whether this process holds the lease: a test takes it away to depose it. */
  const state = { leader: true };
  /** Keys the links' schedules woke, in order. */
  const woken: string[] = [];
  const adapt = options.adapt ?? ((base: Kind) => base);
  const store = options.store ? options.store(api.store) : api.store;
  /**
   * One operator process over the world's apiserver and cloud: everything it remembers is its own, so
   * `restart` (a kill, a new leader) starts from what the apiserver and the cloud hold and nothing else.
   */
  const startProcess = () => {
    const metering = new AccountMetering();
    const turns = new TurnCopies(options.writer ? options.writer(api.writer) : api.writer, {
      kind: 'Widget',
      mayAct: () => state.leader,
    });
    /** One kind's links over `kindCloud`, metered with every other kind of the world. */
    const linksOf = (kindCloud: FakeCloud, kindName: string, kindAdapt: typeof adapt) =>
      new AccountLinks<WidgetSpec, Widget>({
        events,
        adapterFor: (client) => kindAdapt(kindCloud.kind(orgs.get(client), kindName), kindCloud),
        accounts,
        store,
        writer: turns.writer,
        settings: { ...FAST_LINKS, pollIntervalMs: options.pollIntervalMs ?? FAST_LINKS.pollIntervalMs },
        mayAct: () => state.leader,
        wake: () => {},
        wakeKey: (woke) => void woken.push(woke),
        metering,
        clock,
        log,
      });
    const links = linksOf(cloud, 'Widget', adapt);
    const gadgetLinks = linksOf(gadgets, 'Gadget', (base) => base);
    const reconciler = new ManagedReconciler<WidgetSpec, Widget>({
      kind: 'Widget',
      parseSpec: parseWidgetSpec,
      store,
      writer: turns.writer,
      turns,
      events,
      links,
      fleet,
      verifyAfterMs: 20,
      secrets: new SecretWatch({ read: turns.writer.readSecret, wake: () => {}, intervalMs: 60_000, log }),
      clock,
      log: options.log ?? log,
    });
    return { links, gadgetLinks, reconciler };
  };
  let process = startProcess();
  const start = () => {
    process.gadgetLinks.start();
    process.links.start();
  };
  const stop = () => {
    process.links.stop();
    process.gadgetLinks.stop();
  };
  if (options.still !== true) start();
  const reconcile = (objKey: string) => {
    const [namespace = '', name = ''] = objKey.split('/');
    return process.reconciler.reconcile({ namespace, name });
  };
  const eventsOf = (objKey: string) => recorded.events.filter((event) => event.key === objKey);
  return {
    /** The clock every part reads: a test moves it to pass a backoff, a grace or a time to live. */
    clock,
    cloud,
    gadgets,
    api,
    /** Where the links and the parts under test tell events; what they and the fleet told. */
    events,
    recorded,
    state,
    woken,
    get reconciler() {
      return process.reconciler;
    },
    /** The link to the default account, as a resource naming none has it. */
    get link() {
      return process.links.linkFor({
        apiVersion: 'test.gpucloud.io/v1',
        kind: 'Widget',
        metadata: { namespace: 'ns-a', name: 'any', uid: 'any', generation: 1, resourceVersion: '1' },
        spec: {},
      });
    },
    /** The resource stored at `key`, its spec parsed as the reconciler parses it. */
    resource(objKey: string): ManagedObject<WidgetSpec> {
      const stored = api.get(objKey);
      if (!stored) throw new Error(`no ${objKey}`);
      return { ...stored, spec: parseWidgetSpec(stored.spec) };
    },
    /** Starts the caches' lists and the schedules, as the operator does when it runs (a still world's). */
    start,
    /** The operator killed and started again (or another taking over): nothing of the old one's memory. */
    restart(): void {
      stop();
      process = startProcess();
      if (options.still !== true) start();
    },
    /** What a ProviderConfig named `name` does when its spec changes: a new account with `changed` policy. */
    changeAccount(name: string, changed: Partial<AccountPolicy>): void {
      const made = makeAccount(name, API_URL, key, { ...policy, ...changed }, clientSettings());
      accounts.set(name, { account: made, key });
    },
    onAccountChange: (listener: (name: string) => void) => accounts.onChange(listener),
    /** One reconcile of `key`, as the work queue runs it. */
    reconcile,
    /**
     * Reconciles `key` as the work queue would, until it asks for nothing more (or `turns` run out); a
     * failure whose reason is not in `expect` is thrown (see `settleKey`).
     */
    settle(objKey: string, settle: number | SettleOptions = {}): Promise<{ errors: Error[] }> {
      const given = typeof settle === 'number' ? { turns: settle } : settle;
      return settleKey(() => reconcile(objKey), { turns: 12, ...given });
    },
    eventsOf,
    reasonsOf: (objKey: string) => eventsOf(objKey).map((event) => event.reason),
    async close(): Promise<void> {
      stop();
      await accounts.close();
    },
  };
}

export type WidgetWorld = ReturnType<typeof widgetWorld>;
