// One account's link for the fake widget kind, made by the real AccountLinks (cloud cache, guardrails,
// idle schedule, metering of prices) over FakeCloud and FakeApi, with a clock that stands still: for unit
// tests of what the reconciler runs on a link (the operator's pause, budget shedding), one call at a time.

import { pino } from 'pino';
import { Registry } from 'prom-client';
import { z } from 'zod';
import { AccountLinks, AccountMetering } from '../../src/managed/accounts/account-links.ts';
import { AccountRegistry, makeAccount, RotatingKey } from '../../src/managed/accounts/account-registry.ts';
import type { AccountPolicy } from '../../src/managed/accounts/accounts.ts';
import type { EventSink } from '../../src/managed/core/event-sink.ts';
import { type ExternalKind, keyOf, type ManagedObject } from '../../src/managed/core/external-kind.ts';
import { MovableClock } from '../support/clock.ts';
import { FAST_LINKS, FakeApi, FakeCloud, type Recorded, type Widget, type WidgetSpec } from './fakes.ts';

export type Kind = ExternalKind<WidgetSpec, Widget>;

const silent = pino({ level: 'silent' });

/** The widget spec fields these tests read; a stored spec that does not parse throws, as a kind's schema does. */
const widgetSpec = z.looseObject({
  size: z.number().int().optional(),
  pauseOnBudget: z.boolean().optional(),
  idleBelowPercent: z.number().optional(),
  deadlineSeconds: z.number().int().optional(),
  deadlineAction: z.enum(['Pause', 'Delete']).optional(),
});

export function parseWidgetSpec(raw: unknown): WidgetSpec {
  return widgetSpec.parse(raw);
}

/** The widget kind as a kind that cannot pause (an endpoint's, say). */
export const cannotPause = ({ pause: _none, ...kind }: Kind): Kind => kind;

/** The widget kind pausing only at deadlines: neither idle checks nor budget shedding. */
export const pausesOnlyAtDeadlines = (kind: Kind): Kind => ({
  ...kind,
  pause: kind.pause && { paused: kind.pause.paused },
});

export function linkWorld(options: { change?: (kind: Kind) => Kind; policy?: Partial<AccountPolicy> } = {}) {
  const clock = new MovableClock();
  const cloud = new FakeCloud();
  const api = new FakeApi();
  const woken: string[] = [];
  const recorded: Recorded = { events: [], fleet: [] };
  const events: EventSink = {
    event: (obj, type, reason, message) =>
      void recorded.events.push({ key: keyOf(obj), type, reason, message }),
  };
  const change = options.change ?? ((kind: Kind) => kind);
  const key = new RotatingKey('signing-key', async () => 'signing-key');
  const account = makeAccount(
    'default',
    'http://127.0.0.1:9/',
    key,
    { allowsNamespace: () => true, adoption: true, ...options.policy },
    { requestTimeoutMs: 1000, requestsPerSecond: 100, logger: silent, registry: new Registry() },
  );
  const accounts = new AccountRegistry({ account, key });
  const links = new AccountLinks<WidgetSpec, Widget>({
    adapterFor: () => change(cloud.kind()),
    accounts,
    store: api.store,
    writer: api.writer,
    settings: FAST_LINKS,
    mayAct: () => true,
    wake: () => {},
    wakeKey: (woke) => void woken.push(woke),
    metering: new AccountMetering(),
    events,
    clock,
    log: silent,
  });
  const link = links.linkFor({
    apiVersion: 'test.gpucloud.io/v1',
    kind: 'Widget',
    metadata: { namespace: 'ns-a', name: 'any', uid: 'any', generation: 1, resourceVersion: '1' },
    spec: {},
  });
  return {
    clock,
    cloud,
    api,
    link,
    /** Where the link and the parts under test tell events; what they told. */
    events,
    recorded,
    /** Keys the link's idle schedule woke, in order. */
    woken,
    /** The resource stored at `key`, its spec parsed as the reconciler parses it. */
    resource(key: string): ManagedObject<WidgetSpec> {
      const stored = api.get(key);
      if (!stored) throw new Error(`no ${key}`);
      return { ...stored, spec: parseWidgetSpec(stored.spec) };
    },
    /** Starts the cache's lists and the schedules, as the operator does when it runs. */
    start: () => links.start(),
    async close(): Promise<void> {
      links.stop();
      await accounts.close();
    },
  };
}

export type LinkWorld = ReturnType<typeof linkWorld>;
