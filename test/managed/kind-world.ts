import type { EventSink } from '../../src/managed/core/event-sink.ts';
// A widget world whose kind can be changed: the same wiring as widgetWorld() of fakes.ts (the real
// AccountLinks, Creation, CloudCache and AccountRegistry over FakeCloud and FakeApi), with the adapter
// made from `cloud.kind()` by `adapt`, leadership that can be lost, and a details schedule that ticks.

import { type Logger, pino } from 'pino';
import { Registry } from 'prom-client';
import { z } from 'zod';
import { AccountLinks } from '../../src/managed/accounts/account-links.ts';
import { AccountRegistry, makeAccount, RotatingKey } from '../../src/managed/accounts/account-registry.ts';
import type { AccountPolicy } from '../../src/managed/accounts/accounts.ts';
import { type ExternalKind, keyOf } from '../../src/managed/core/external-kind.ts';
import type { KindEvents } from '../../src/managed/core/fleet-metrics.ts';
import type { ManagedStore } from '../../src/managed/core/store.ts';
import type { ManagedWriter } from '../../src/managed/core/writer.ts';
import { ManagedReconciler } from '../../src/managed/reconciler/reconciler.ts';
import { TurnCopies } from '../../src/managed/reconciler/turn-copies.ts';
import { SecretWatch } from '../../src/managed/secrets/secret-watch.ts';
import { MovableClock } from '../support/clock.ts';
import { FAST_LINKS, FakeApi, FakeCloud, type Recorded, type Widget, type WidgetSpec } from './fakes.ts';
import { type SettleOptions, settleKey } from './settle.ts';

const spec = z.looseObject({
  size: z.number().int().optional(),
  paused: z.boolean().optional(),
  spot: z.boolean().optional(),
  managementPolicies: z
    .array(z.enum(['Observe', 'Create', 'Update', 'Delete', 'LateInitialize', '*']))
    .optional(),
  recoveryPolicy: z.enum(['Never', 'Recreate']).optional(),
  writeConnectionSecretToRef: z.object({ name: z.string() }).optional(),
});

export type Kind = ExternalKind<WidgetSpec, Widget>;

export function kindWorld(
  options: {
    adapt?: (base: Kind, cloud: FakeCloud) => Kind;
    policy?: Partial<AccountPolicy>;
    /** Wraps the apiserver's writer (to fail or observe writes). */
    writer?: (base: ManagedWriter) => ManagedWriter;
    /** Wraps the informer's store (to answer stale copies). */
    store?: (base: ManagedStore) => ManagedStore;
    /** The reconciler's log (silent unless given). */
    log?: Logger;
    /** How often the cloud cache lists (10 ms unless given). */
    pollIntervalMs?: number;
    /** More accounts, each on an API URL of its own. */
    others?: readonly string[];
  } = {},
) {
  const cloud = new FakeCloud();
  const api = new FakeApi();
  const recorded: Recorded = { events: [], fleet: [] };
  const events: EventSink = {
    event: (obj, type, reason, message) =>
      void recorded.events.push({ key: keyOf(obj), type, reason, message }),
  };
  const log = pino({ level: 'silent' });
  const key = new RotatingKey('signing-key', async () => 'signing-key');
  const policy: AccountPolicy = { allowsNamespace: () => true, adoption: true, ...options.policy };
  const account = makeAccount('default', 'http://127.0.0.1:9/', key, policy, {
    requestTimeoutMs: 1000,
    requestsPerSecond: 100,
    logger: log,
    registry: new Registry(),
  });
  const accounts = new AccountRegistry({ account, key });
  for (const [index, name] of (options.others ?? []).entries()) {
    const otherKey = new RotatingKey(`${name}-key`, async () => `${name}-key`);
    const made = makeAccount(
      name,
      `http://127.0.0.2:${10 + index}/`,
      otherKey,
      { allowsNamespace: () => true, adoption: true },
      { requestTimeoutMs: 1000, requestsPerSecond: 100, logger: log, registry: new Registry() },
    );
    accounts.set(name, { account: made, key: otherKey });
  }
  const fleet: KindEvents = {
    becameReady: () => void recorded.fleet.push('ready'),
    drifted: () => void recorded.fleet.push('drifted'),
    preempted: () => void recorded.fleet.push('preempted'),
    refused: (reason) => void recorded.fleet.push(`refused ${reason}`),
    pausedByOperator: (reason) => void recorded.fleet.push(`paused ${reason}`),
    deadlineExceeded: (action) => void recorded.fleet.push(`deadline ${action}`),
  };
  const state = { leader: true, woken: [] as string[] };
  const clock = new MovableClock({ flowing: true });
  const turns = new TurnCopies(options.writer ? options.writer(api.writer) : api.writer, {
    kind: 'Widget',
    mayAct: () => state.leader,
  });
  const { writer } = turns;
  const store = options.store ? options.store(api.store) : api.store;
  const adapt = options.adapt ?? ((base: Kind) => base);
  const links = new AccountLinks<WidgetSpec, Widget>({
    events,
    adapterFor: () => adapt(cloud.kind(), cloud),
    accounts,
    store,
    writer,
    settings: { ...FAST_LINKS, pollIntervalMs: options.pollIntervalMs ?? FAST_LINKS.pollIntervalMs },
    mayAct: () => state.leader,
    wake: () => {},
    wakeKey: (woken) => void state.woken.push(woken),
    clock,
    log,
  });
  const reconciler = new ManagedReconciler<WidgetSpec, Widget>({
    kind: 'Widget',
    parseSpec: (raw) => spec.parse(raw) as WidgetSpec,
    store,
    writer,
    turns,
    events,
    links,
    fleet,
    verifyAfterMs: 20,
    secrets: new SecretWatch({ read: writer.readSecret, wake: () => {}, intervalMs: 60_000, log }),
    clock,
    log: options.log ?? log,
  });
  links.start();
  const reconcile = (objKey: string) => {
    const [namespace = '', name = ''] = objKey.split('/');
    return reconciler.reconcile({ namespace, name });
  };
  return {
    clock,
    cloud,
    api,
    recorded,
    state,
    reconcile,
    reconciler,
    /** What a ProviderConfig named `name` does when its spec changes: a new account with `changed` policy. */
    changeAccount(name: string, changed: Partial<AccountPolicy>): void {
      const made = makeAccount(
        name,
        'http://127.0.0.1:9/',
        key,
        { ...policy, ...changed },
        { requestTimeoutMs: 1000, requestsPerSecond: 100, logger: log, registry: new Registry() },
      );
      accounts.set(name, { account: made, key });
    },
    onAccountChange: (listener: (name: string) => void) => accounts.onChange(listener),
    /** Reconciles `key` until it asks for nothing more soon (or `turns` run out); collects errors. */
    /** Reconciles `key` until it asks for nothing more soon (or `turns` run out); see `settleKey`. */
    settle(objKey: string, options: number | SettleOptions = {}): Promise<{ errors: Error[] }> {
      const settle = typeof options === 'number' ? { turns: options } : options;
      return settleKey(() => reconcile(objKey), { turns: 8, farMs: 1_000, ...settle });
    },
    eventsOf(objKey: string) {
      return recorded.events.filter((event) => event.key === objKey);
    },
    async close(): Promise<void> {
      links.stop();
      await accounts.close();
    },
  };
}

export type KindWorld = ReturnType<typeof kindWorld>;
