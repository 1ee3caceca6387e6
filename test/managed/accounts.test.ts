import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { type Logger, pino } from 'pino';
import { Registry } from 'prom-client';
import { GpuCloudClient } from '../../src/api/client.ts';
import { systemClock } from '../../src/lib/clock.ts';
import { AccountLinks, AccountMetering } from '../../src/managed/accounts/account-links.ts';
import {
  AccountRegistry,
  type Entry,
  makeAccount,
  openPolicy,
  RotatingKey,
  readKeyFile,
  watchKeyFile,
} from '../../src/managed/accounts/account-registry.ts';
import {
  type Account,
  type AccountPolicy,
  NamespaceNotAllowedError,
  notAllowed,
  Usage,
} from '../../src/managed/accounts/accounts.ts';
import { accountOf, DEFAULT_ACCOUNT } from '../../src/managed/core/account-ref.ts';
import { CREATE_INTENT, CREATE_NAME } from '../../src/managed/core/annotations.ts';
import { ReconcileError } from '../../src/managed/core/errors.ts';
import type { ExternalKind, ManagedObject } from '../../src/managed/core/external-kind.ts';
import { NotLeaderError } from '../../src/managed/core/fence.ts';
import type { Claim } from '../../src/managed/core/store.ts';
import { sealIntent } from '../../src/managed/creation/creation.ts';
import { type ClaimQuestion, judgeClaim } from '../../src/managed/identity/claims.ts';
import { FakeApi, FakeCloud, type Widget, type WidgetSpec } from './fakes.ts';

const log = pino({ level: 'silent' });

/** A logger whose lines the test reads, as an operator reads the operator's log. */
function capturedLog() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A client that only counts its closes: the accounts here never call the cloud through it. */
function fakeClient(): { client: GpuCloudClient; closes: () => number } {
  let closes = 0;
  const client = {
    close: async () => {
      closes += 1;
    },
  } as unknown as GpuCloudClient;
  return { client, closes: () => closes };
}

function fakeAccount(
  name: string,
  options: {
    scope?: string;
    policy?: Partial<AccountPolicy>;
    pollIntervalMs?: number;
    keys?: string[];
  } = {},
): Account & { closes: () => number } {
  const { client, closes } = fakeClient();
  return {
    name,
    scope: options.scope ?? 'http://cloud.test/',
    client,
    pollIntervalMs: options.pollIntervalMs,
    policy: { allowsNamespace: () => true, adoption: true, ...options.policy },
    intentKeys: () => options.keys ?? [`${name}-key`],
    usage: new Usage(),
    closes,
  };
}

const entryOf = (account: Account, problem?: ReconcileError): Entry => ({
  account,
  key: new RotatingKey(`${account.name}-key`, async () => `${account.name}-key`),
  problem,
});

function widget(spec: Record<string, unknown> = {}, namespace = 'ns-a'): ManagedObject<unknown> {
  return new FakeApi().create('w', spec, {}, namespace);
}

function rejection(run: () => unknown): ReconcileError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ReconcileError, `a ReconcileError, not ${String(error)}`);
    return error;
  }
  assert.fail('expected a refusal');
}

/** A reservation of GPUs only. */
const gpus = (count: number) => ({ gpus: count, perHour: 0, namespace: 'ns-a' });

describe('Usage', () => {
  test('totals every metered kind and the reservations not yet done; a kind metered again counts once', () => {
    const usage = new Usage();
    assert.equal(usage.total(), 0);
    usage.meter('Pod', { heldGpus: () => 3, counted: () => true, spendPerHour: () => 0 });
    usage.meter('Vm', { heldGpus: () => 1, counted: () => true, spendPerHour: () => 0 });
    assert.equal(usage.total(), 4);
    usage.meter('Vm', { heldGpus: () => 2, counted: () => true, spendPerHour: () => 0 });
    assert.equal(usage.total(), 5);
    let landed = false;
    usage.reserve(gpus(4), () => landed);
    usage.reserve(gpus(1), () => false);
    assert.equal(usage.total(), 10);
    landed = true;
    assert.equal(usage.total(), 6);
    landed = false;
    assert.equal(usage.total(), 6, 'a reservation once done is dropped for good');
  });

  test('an account nobody checks keeps no done reservation for good: each create of one without limits would leak one', () => {
    const usage = new Usage();
    const open = new Set<number>();
    for (let create = 0; create < 10_000; create++) {
      open.add(create);
      usage.reserve(gpus(1), () => !open.has(create));
      // Each create's object is listed soon after: only the last few are still in flight.
      open.delete(create - 8);
    }
    assert.ok(usage.reservations < 200, `${usage.reservations} reservations kept after 10,000 creates`);
    assert.equal(usage.total(), 8, 'the eight in flight still count');
  });

  test('a reservation of nothing counts nothing; a negative one is what a pause in flight sheds', () => {
    const usage = new Usage();
    usage.meter('Pod', { heldGpus: () => 3, counted: () => true, spendPerHour: () => 6 });
    usage.reserve(gpus(0), () => false);
    assert.equal(usage.total(), 3);
    let paused = false;
    usage.reserve({ gpus: -1, perHour: -2, namespace: 'ns-a' }, () => paused);
    assert.equal(usage.total(), 2);
    assert.equal(
      usage.spendPerHour(() => true),
      4,
    );
    paused = true;
    assert.equal(
      usage.spendPerHour(() => true),
      6,
      'done: the meter counts it now',
    );
  });

  test('is counted only once every metered kind has listed', () => {
    const usage = new Usage();
    assert.equal(usage.counted(), true, 'nothing metered, nothing to wait for');
    let listed = false;
    usage.meter('Pod', { heldGpus: () => 0, counted: () => true, spendPerHour: () => 0 });
    usage.meter('Vm', { heldGpus: () => 0, counted: () => listed, spendPerHour: () => 0 });
    assert.equal(usage.counted(), false);
    listed = true;
    assert.equal(usage.counted(), true);
  });
});

describe('accountOf', () => {
  test('names spec.providerConfigRef.name, else the default account', () => {
    assert.equal(accountOf({ providerConfigRef: { name: 'acme' } }), 'acme');
    for (const spec of [
      undefined,
      null,
      'text',
      42,
      {},
      { providerConfigRef: null },
      { providerConfigRef: 'acme' },
      { providerConfigRef: {} },
      { providerConfigRef: { name: 7 } },
      { providerConfigRef: { name: '' } },
    ]) {
      assert.equal(accountOf(spec), DEFAULT_ACCOUNT, JSON.stringify(spec));
    }
    assert.equal(DEFAULT_ACCOUNT, 'default');
  });
});

describe('NamespaceNotAllowedError', () => {
  test('is terminal and tells the user what to do', () => {
    const error = notAllowed('acme', 'team-b');
    assert.ok(error instanceof NamespaceNotAllowedError);
    assert.equal(error.reason, 'ProviderConfigNotAllowed');
    assert.equal(error.terminal, true);
    assert.equal(
      error.message,
      'namespace team-b may not use provider config acme; ask its owner to allow the namespace, or name another in spec.providerConfigRef',
    );
  });
});

describe('AccountRegistry', () => {
  test('resolves the implicit default only under the default name, and a ProviderConfig of that name wins', () => {
    const implicit = fakeAccount('default');
    const registry = new AccountRegistry(entryOf(implicit));
    assert.equal(registry.resolve('default', 'ns-a'), implicit);
    assert.equal(registry.get('default'), undefined, 'get answers ProviderConfigs only');
    const missing = rejection(() => registry.resolve('acme', 'ns-a'));
    assert.equal(missing.reason, 'ProviderConfigNotFound');
    assert.equal(missing.terminal, false);
    assert.equal(
      missing.message,
      'no ProviderConfig acme; create it, or name another in spec.providerConfigRef',
    );
    const configured = fakeAccount('default');
    registry.set('default', entryOf(configured));
    assert.equal(registry.resolve('default', 'ns-a'), configured);
  });

  test('without an implicit account, default is not found either', () => {
    const registry = new AccountRegistry();
    assert.equal(rejection(() => registry.resolve('default', 'ns-a')).reason, 'ProviderConfigNotFound');
    assert.equal(registry.scopeOf('default'), undefined);
  });

  test('refuses a namespace the policy does not allow, before any problem of the account', () => {
    const registry = new AccountRegistry();
    const problem = new ReconcileError('ProviderConfigInvalid', 'bad key', { terminal: false });
    const acme = fakeAccount('acme', { policy: { allowsNamespace: (ns) => ns === 'team-a' } });
    registry.set('acme', entryOf(acme, problem));
    const refused = rejection(() => registry.resolve('acme', 'team-b'));
    assert.ok(refused instanceof NamespaceNotAllowedError);
    assert.equal(
      rejection(() => registry.resolve('acme', 'team-a')),
      problem,
    );
    const entry = registry.get('acme');
    assert.ok(entry);
    entry.problem = undefined;
    assert.equal(registry.resolve('acme', 'team-a'), acme);
  });

  test('scopeOf answers a known account’s scope, the implicit default’s too', () => {
    const registry = new AccountRegistry(entryOf(fakeAccount('default', { scope: 'http://a/' })));
    registry.set('acme', entryOf(fakeAccount('acme', { scope: 'http://b/' })));
    assert.equal(registry.scopeOf('acme'), 'http://b/');
    assert.equal(registry.scopeOf('default'), 'http://a/');
    assert.equal(registry.scopeOf('nobody'), undefined);
  });

  test('closes a client when its account is replaced or deleted, and every client on close', async () => {
    const implicit = fakeAccount('default');
    const registry = new AccountRegistry(entryOf(implicit));
    const first = fakeAccount('acme');
    registry.set('acme', entryOf(first));
    registry.set('acme', entryOf(first));
    assert.equal(first.closes(), 0, 'the same account again is no replacement');
    const second = fakeAccount('acme');
    registry.set('acme', entryOf(second));
    assert.equal(first.closes(), 1);
    assert.equal(registry.resolve('acme', 'ns-a'), second);
    registry.delete('acme');
    assert.equal(second.closes(), 1);
    assert.equal(registry.get('acme'), undefined);
    assert.throws(() => registry.resolve('acme', 'ns-a'), ReconcileError);
    registry.delete('acme');
    assert.equal(second.closes(), 1);
    const beta = fakeAccount('beta');
    registry.set('beta', entryOf(beta));
    await registry.close();
    assert.equal(beta.closes(), 1);
    assert.equal(implicit.closes(), 1);
    await new AccountRegistry().close();
  });
});

describe('makeAccount and openPolicy', () => {
  test('an account has its scope (the normalised API URL), poll interval, keys and usage', async () => {
    const key = new RotatingKey('k1', async () => 'k2');
    const account = makeAccount(
      'acme',
      'http://Cloud.Test:8080',
      key,
      openPolicy(false),
      { requestTimeoutMs: 1000, requestsPerSecond: 5, logger: log, registry: new Registry() },
      { pollIntervalMs: 250 },
    );
    try {
      assert.equal(account.name, 'acme');
      assert.equal(account.scope, 'http://cloud.test:8080/');
      assert.equal(account.pollIntervalMs, 250);
      assert.ok(account.client instanceof GpuCloudClient);
      assert.ok(account.usage instanceof Usage);
      assert.deepEqual(account.intentKeys(), ['k1']);
      await key.refresh();
      assert.deepEqual(account.intentKeys(), ['k2', 'k1']);
      assert.equal(account.policy.adoption, false);
      assert.equal(account.policy.allowsNamespace('any'), true);
      assert.equal(openPolicy(true).adoption, true);
      const plain = makeAccount('b', 'http://cloud.test/', key, openPolicy(true), {
        requestTimeoutMs: 1000,
        requestsPerSecond: 5,
        logger: log,
        registry: new Registry(),
      });
      assert.equal(plain.pollIntervalMs, undefined);
      await plain.client.close();
    } finally {
      await account.client.close();
    }
  });
});

describe('an account’s client', () => {
  test('logs its calls with the account’s name, and keeps to the account’s rate with a burst of its size', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    // Nothing listens on port 9: every attempt fails at once, and each is logged.
    const account = makeAccount(
      'acme',
      'http://127.0.0.1:9/',
      new RotatingKey('k', async () => 'k'),
      openPolicy(true),
      { requestTimeoutMs: 500, requestsPerSecond: 100, logger, registry: new Registry() },
      { requestsPerSecond: 2 },
    );
    const calls = [1, 2, 3].map(() => account.client.vms.types().catch(() => undefined));
    try {
      await sleep(200);
      const first = lines.filter((line) => line.attempt === 1);
      assert.equal(first.length, 2, 'two at once, the third waits for the rate');
      assert.equal(first[0]?.component, 'gpucloud-api');
      assert.equal(first[0]?.account, 'acme');
    } finally {
      await account.client.close();
      await Promise.all(calls);
    }
  });
});

describe('RotatingKey', () => {
  test('keeps the key before the last change, ignores an empty or unchanged key, and refreshes by reading', async () => {
    let next = 'b';
    const key = new RotatingKey('a', async () => next);
    assert.equal(key.current(), 'a');
    assert.deepEqual(key.keys(), ['a']);
    key.set('');
    key.set('a');
    assert.deepEqual(key.keys(), ['a'], 'nothing changed');
    assert.equal(await key.refresh(), 'b');
    assert.deepEqual(key.keys(), ['b', 'a']);
    next = 'c';
    await key.refresh();
    assert.deepEqual(key.keys(), ['c', 'b'], 'only the one before the last change is kept');
    key.set('c');
    assert.deepEqual(key.keys(), ['c', 'b']);
  });
});

describe('key files', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  test('readKeyFile reads the key without surrounding whitespace', async () => {
    dir = mkdtempSync(join(tmpdir(), 'h7-key-'));
    const file = join(dir, 'key');
    writeFileSync(file, '  secret-1\n');
    assert.equal(await readKeyFile(file)(), 'secret-1');
  });

  test('watchKeyFile takes a rewritten key, keeps it when the file cannot be read, and stops', async () => {
    dir = mkdtempSync(join(tmpdir(), 'h7-key-'));
    const file = join(dir, 'key');
    writeFileSync(file, 'first\n');
    const key = new RotatingKey('first', async () => 'first');
    const { logger, lines } = capturedLog();
    const said = (msg: string) => lines.filter((line) => line.msg === msg);
    const changed = 'API key file changed; using the new key';
    const unreadable = 'could not read the API key file; keeping the key';
    const stop = watchKeyFile(file, key, logger, 5);
    try {
      await sleep(20);
      writeFileSync(file, 'second-key\n');
      for (let i = 0; i < 200 && key.current() !== 'second-key'; i++) await sleep(5);
      assert.deepEqual(key.keys(), ['second-key', 'first']);
      await sleep(10);
      assert.deepEqual(
        said(changed).map((line) => [line.level, line.file]),
        [[30, file]],
      );
      writeFileSync(file, '  second-key  \n');
      await sleep(60);
      assert.equal(said(changed).length, 1, 'the same key rewritten is no change');
      rmSync(file);
      for (let i = 0; i < 200 && said(unreadable).length === 0; i++) await sleep(5);
      assert.equal(key.current(), 'second-key');
      const [warning] = said(unreadable);
      assert.equal(warning?.level, 40);
      assert.equal(warning?.file, file);
      assert.ok(warning?.err, 'the warning carries the error');
    } finally {
      stop();
    }
    writeFileSync(file, 'third-key-longer\n');
    await sleep(60);
    assert.equal(key.current(), 'second-key', 'no longer watched');
  });
});

// --- AccountLinks --------------------------------------------------------------------------------------

interface LinksWorld {
  registry: AccountRegistry;
  clouds: Map<GpuCloudClient, FakeCloud>;
  links: AccountLinks<WidgetSpec, Widget>;
  woken: string[];
  wokenKeys: string[];
  /** The apiserver the links write to. */
  api: FakeApi;
  cloudOf(account: Account): FakeCloud;
}

const opened: Array<AccountLinks<WidgetSpec, Widget>> = [];
afterEach(() => {
  for (const links of opened.splice(0)) links.stop();
});

function linksWorld(
  options: {
    registry?: AccountRegistry;
    metering?: AccountMetering;
    kind?: string;
    pollIntervalMs?: number;
    mayAct?: () => boolean;
    clouds?: Map<GpuCloudClient, FakeCloud>;
    adapt?: (kind: ExternalKind<WidgetSpec, Widget>) => ExternalKind<WidgetSpec, Widget>;
    detailsCallsPerSecond?: number;
    log?: Logger;
  } = {},
): LinksWorld {
  const registry = options.registry ?? new AccountRegistry();
  const clouds = options.clouds ?? new Map<GpuCloudClient, FakeCloud>();
  const cloudOf = (account: Account) => {
    let cloud = clouds.get(account.client);
    if (!cloud) {
      cloud = new FakeCloud();
      clouds.set(account.client, cloud);
    }
    return cloud;
  };
  const api = new FakeApi();
  const woken: string[] = [];
  const wokenKeys: string[] = [];
  const links = new AccountLinks<WidgetSpec, Widget>({
    events: { event: () => {}, forget: () => {} },
    adapterFor: (client) => {
      let cloud = clouds.get(client);
      if (!cloud) {
        cloud = new FakeCloud();
        clouds.set(client, cloud);
      }
      const kind = cloud.kind('org-1', options.kind ?? 'Widget');
      return options.adapt ? options.adapt(kind) : kind;
    },
    accounts: registry,
    store: api.store,
    writer: api.writer,
    settings: {
      pollIntervalMs: options.pollIntervalMs ?? 60_000,
      refreshMinIntervalMs: 0,
      detailsCallsPerSecond: options.detailsCallsPerSecond ?? 10,
      detailsIntervalMs: 60_000,
      idleChecksPerSecond: 10,
      idleCheckIntervalMs: 60_000,
      creation: { graceMs: 1_000, skewMs: 1_000 },
    },
    mayAct: options.mayAct ?? (() => true),
    wake: (id) => void woken.push(id),
    wakeKey: (key) => void wokenKeys.push(key),
    metering: options.metering,
    clock: systemClock,
    log: options.log ?? log,
  });
  opened.push(links);
  return { registry, clouds, links, woken, wokenKeys, cloudOf, api };
}

const listsOf = (cloud: FakeCloud) => cloud.calls.filter((call) => call.op === 'list').length;

describe('AccountLinks', () => {
  test('linkFor opens one link per account a resource names, signing intents with that account’s keys', () => {
    const { registry, links } = linksWorld({
      registry: new AccountRegistry(entryOf(fakeAccount('default'))),
    });
    const acme = fakeAccount('acme', { keys: ['acme-signing'] });
    registry.set('acme', entryOf(acme));
    const implicit = links.linkFor(widget());
    assert.equal(implicit.account.name, 'default');
    const link = links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    assert.equal(link.account, acme);
    assert.equal(links.linkFor(widget({ providerConfigRef: { name: 'acme' } })), link, 'the same link again');
    assert.notEqual(link.cache, implicit.cache);
    assert.equal(link.details, undefined, 'a kind without details has no schedule');
    assert.equal(link.actedAt.size, 0);

    const mr = widget({ providerConfigRef: { name: 'acme' } });
    const at = Date.now() - 1_000;
    mr.metadata.annotations = {
      [CREATE_INTENT]: `${at}.${sealIntent('acme-signing', mr.metadata.uid, at, 'w')}`,
      [CREATE_NAME]: 'w',
    };
    assert.equal(link.creation.intentAt(mr), at);
    assert.equal(implicit.creation.intentAt(mr), undefined);
  });

  test('linkFor refuses what the registry refuses', () => {
    const { registry, links } = linksWorld();
    registry.set('acme', entryOf(fakeAccount('acme', { policy: { allowsNamespace: () => false } })));
    assert.equal(
      rejection(() => links.linkFor(widget({ providerConfigRef: { name: 'acme' } }))).reason,
      'ProviderConfigNotAllowed',
    );
    assert.equal(rejection(() => links.linkFor(widget())).reason, 'ProviderConfigNotFound');
  });

  test('the link’s adapter is fenced by leadership', async () => {
    let leader = true;
    const { registry, links, clouds } = linksWorld({ mayAct: () => leader });
    const acme = fakeAccount('acme');
    registry.set('acme', entryOf(acme));
    const link = links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    const cloud = clouds.get(acme.client);
    assert.ok(cloud && link.adapter.delete);
    const made = cloud.put({ name: 'x' });
    leader = false;
    const remove = link.adapter.delete;
    await assert.rejects(async () => remove(made.id), NotLeaderError);
    assert.deepEqual(cloud.mutations(), []);
    leader = true;
    await link.adapter.delete(made.id);
    assert.deepEqual(cloud.mutations(), [{ op: 'delete', id: made.id }]);
  });

  test('caches list only while the links run: opened before start, at start; opened after, at once', async () => {
    const { registry, links, cloudOf, woken } = linksWorld();
    const acme = fakeAccount('acme');
    const beta = fakeAccount('beta');
    registry.set('acme', entryOf(acme));
    registry.set('beta', entryOf(beta));
    const acmeCloud = cloudOf(acme);
    const betaCloud = cloudOf(beta);
    const made = acmeCloud.put({ name: 'x' });
    links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    await sleep(20);
    assert.equal(listsOf(acmeCloud), 0, 'not running yet');
    links.start();
    await sleep(20);
    assert.equal(listsOf(acmeCloud), 1);
    assert.deepEqual(woken, [made.id], 'a new object wakes its resources');
    links.linkFor(widget({ providerConfigRef: { name: 'beta' } }));
    await sleep(20);
    assert.equal(listsOf(betaCloud), 1);
    links.stop();
    const link = links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    link.cache.requestRefresh();
    await sleep(20);
    assert.equal(listsOf(acmeCloud), 1, 'stopped');
  });

  test('a change of an object it just made wakes the resource by name, before any claim on the id shows', async () => {
    const { registry, links, cloudOf, wokenKeys, api } = linksWorld();
    const acme = fakeAccount('acme');
    registry.set('acme', entryOf(acme));
    links.start();
    api.create('w', { providerConfigRef: { name: 'acme' } });
    const stored = api.get('ns-a/w');
    assert.ok(stored);
    const mr = { ...stored, spec: stored.spec as WidgetSpec };
    const link = links.linkFor(mr);
    const got = await link.creation.obtain(mr, {
      resolveEnv: async () => [],
      ownerMarker: { key: 'GPUCLOUD_OWNER_UID', value: mr.metadata.uid },
      secretsChanged: () => false,
    });
    assert.equal(got.kind, 'have');
    assert.deepEqual(wokenKeys, [], 'nothing changed yet');
    const [made] = cloudOf(acme).live();
    assert.ok(made);
    made.status = 'FAILED';
    link.cache.requestRefresh();
    for (let i = 0; i < 100 && wokenKeys.length === 0; i++) await sleep(10);
    // The informer may not show the id on the resource yet: the links wake it by its name all the same.
    assert.deepEqual(wokenKeys, ['ns-a/w']);
    link.creation.forget(mr.metadata.uid);
    assert.equal(link.creation.madeFor(made.id), undefined, 'forgotten with the resource');
  });

  test('a link opened after the links stopped does not list', async () => {
    const { registry, links, cloudOf } = linksWorld();
    const acme = fakeAccount('acme');
    registry.set('acme', entryOf(acme));
    links.start();
    links.stop();
    links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    await sleep(20);
    assert.equal(listsOf(cloudOf(acme)), 0);
  });

  test('a kind with details gets a schedule that wakes its resources while the links run', async () => {
    const { registry, links, wokenKeys } = linksWorld({
      detailsCallsPerSecond: 1_000,
      adapt: (kind) => ({
        ...kind,
        details: { calls: 1, fields: ['runtime'], applies: () => true, fetch: async () => ({ runtime: 1 }) },
      }),
    });
    registry.set('acme', entryOf(fakeAccount('acme')));
    const link = links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    assert.ok(link.details);
    links.start();
    link.details.track('ns-a/w');
    for (let i = 0; i < 100 && wokenKeys.length === 0; i++) await sleep(10);
    assert.deepEqual(wokenKeys, ['ns-a/w']);
    assert.equal(link.details.isDue('ns-a/w'), true);
    links.stop();
    link.details.track('ns-a/other');
    await sleep(300);
    assert.deepEqual(wokenKeys, ['ns-a/w'], 'stopped with the links');
  });

  test('a cache’s log names its account', async () => {
    const { logger, lines } = capturedLog();
    const { registry, links } = linksWorld({
      log: logger,
      adapt: (kind) => ({
        ...kind,
        list: async () => {
          throw new Error('cloud down');
        },
      }),
    });
    registry.set('acme', entryOf(fakeAccount('acme')));
    links.start();
    links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    for (let i = 0; i < 100 && lines.length === 0; i++) await sleep(5);
    assert.equal(lines[0]?.msg, 'cloud list failed; keeping the last view');
    assert.equal(lines[0]?.account, 'acme');
  });

  test('an account’s own poll interval beats the operator’s', async () => {
    const { registry, links, cloudOf } = linksWorld({ pollIntervalMs: 60_000 });
    const fast = fakeAccount('fast', { pollIntervalMs: 5 });
    const slow = fakeAccount('slow');
    registry.set('fast', entryOf(fast));
    registry.set('slow', entryOf(slow));
    links.start();
    links.linkFor(widget({ providerConfigRef: { name: 'fast' } }));
    links.linkFor(widget({ providerConfigRef: { name: 'slow' } }));
    await sleep(80);
    assert.ok(listsOf(cloudOf(fast)) >= 3, `fast listed ${listsOf(cloudOf(fast))} times`);
    assert.equal(listsOf(cloudOf(slow)), 1);
  });

  test('a replaced account gets a new link, and the old one stops listing', async () => {
    const { registry, links, cloudOf } = linksWorld();
    const old = fakeAccount('acme', { pollIntervalMs: 5 });
    registry.set('acme', entryOf(old));
    links.start();
    const first = links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    await sleep(30);
    const renewed = fakeAccount('acme', { pollIntervalMs: 5 });
    registry.set('acme', entryOf(renewed));
    const second = links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    assert.notEqual(second, first);
    assert.equal(second.account, renewed);
    const before = listsOf(cloudOf(old));
    await sleep(40);
    assert.equal(listsOf(cloudOf(old)), before, 'the old link no longer lists');
    assert.ok(listsOf(cloudOf(renewed)) >= 2);
  });

  test('sameScope: accounts collide on the same API URL, and an unknown account collides with all', () => {
    const { registry, links } = linksWorld();
    const acme = fakeAccount('acme', { scope: 'http://one/' });
    registry.set('acme', entryOf(acme));
    registry.set('twin', entryOf(fakeAccount('twin', { scope: 'http://one/' })));
    registry.set('far', entryOf(fakeAccount('far', { scope: 'http://two/' })));
    assert.equal(links.sameScope(acme, 'twin'), true);
    assert.equal(links.sameScope(acme, 'far'), false);
    assert.equal(links.sameScope(acme, 'unknown'), true);
  });

  test('hint goes to the caches that hold the id, or to every cache when none does', async () => {
    const { registry, links, cloudOf } = linksWorld();
    const acme = fakeAccount('acme');
    const beta = fakeAccount('beta');
    registry.set('acme', entryOf(acme));
    registry.set('beta', entryOf(beta));
    const acmeLink = links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    links.linkFor(widget({ providerConfigRef: { name: 'beta' } }));
    const held = cloudOf(acme).put({ name: 'x' });
    acmeLink.cache.remember(held);
    links.hint(held.id, 'PAUSED');
    await sleep(10);
    assert.deepEqual(cloudOf(acme).calls, [{ op: 'get', id: held.id }]);
    assert.deepEqual(cloudOf(beta).calls, []);
    links.hint('999', 'RUNNING');
    await sleep(10);
    assert.deepEqual(cloudOf(beta).calls[0], { op: 'get', id: '999' });
    assert.deepEqual(cloudOf(acme).calls[1], { op: 'get', id: '999' });
  });

  test('a hint with no link open does nothing: no link is opened for it, nobody is woken, no call', async () => {
    const { links, clouds, woken, wokenKeys } = linksWorld();
    links.start();
    links.hint('1', 'RUNNING');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(clouds.size, 0, 'no account was connected for a hint');
    assert.deepEqual([woken, wokenKeys], [[], []]);
  });
});

describe('AccountMetering', () => {
  test('opens every metered kind’s link to an account with a GPU limit as soon as one kind uses it', async () => {
    const metering = new AccountMetering();
    const registry = new AccountRegistry();
    const clouds = new Map<GpuCloudClient, FakeCloud>();
    const widgets = linksWorld({ registry, metering, clouds, kind: 'Widget' });
    const gadgets = linksWorld({ registry, metering, clouds, kind: 'Gadget' });
    widgets.links.start();
    gadgets.links.start();
    const limited = fakeAccount('limited', { policy: { maxLiveGpus: 8 } });
    registry.set('limited', entryOf(limited));
    const cloud = widgets.cloudOf(limited);
    cloud.put({ name: 'a', size: 2 });
    cloud.put({ name: 'b', size: 3, status: 'PAUSED' });
    assert.equal(limited.usage.counted(), true);
    widgets.links.linkFor(widget({ providerConfigRef: { name: 'limited' } }));
    assert.equal(limited.usage.counted(), false, 'no list of either kind yet');
    await sleep(30);
    assert.equal(limited.usage.counted(), true);
    // Both kinds list the same fake cloud here: each counts the running widget.
    assert.equal(limited.usage.total(), 4);
    assert.equal(listsOf(cloud), 2, 'one list per kind');
  });

  test('an account without a GPU limit costs no other kind’s list, and is metered by the kinds that use it', async () => {
    const metering = new AccountMetering();
    const registry = new AccountRegistry();
    const clouds = new Map<GpuCloudClient, FakeCloud>();
    const widgets = linksWorld({ registry, metering, clouds, kind: 'Widget' });
    const gadgets = linksWorld({ registry, metering, clouds, kind: 'Gadget' });
    widgets.links.start();
    gadgets.links.start();
    const open = fakeAccount('open');
    registry.set('open', entryOf(open));
    const cloud = widgets.cloudOf(open);
    cloud.put({ name: 'a', size: 2 });
    widgets.links.linkFor(widget({ providerConfigRef: { name: 'open' } }));
    await sleep(30);
    assert.equal(listsOf(cloud), 1);
    assert.equal(open.usage.total(), 2);
  });

  test('without metering, links meter nothing', async () => {
    const { registry, links, cloudOf } = linksWorld();
    const acme = fakeAccount('acme');
    registry.set('acme', entryOf(acme));
    cloudOf(acme).put({ name: 'a', size: 2 });
    links.start();
    links.linkFor(widget({ providerConfigRef: { name: 'acme' } }));
    await sleep(20);
    assert.equal(acme.usage.total(), 0);
  });

  test('used opens each account once, and only an account with a limit', () => {
    const metering = new AccountMetering();
    const seen: string[] = [];
    metering.add((account) => void seen.push(`a:${account.name}`));
    metering.add((account) => void seen.push(`b:${account.name}`));
    const limited = fakeAccount('limited', { policy: { maxLiveGpus: 0 } });
    metering.used(fakeAccount('open'));
    metering.used(limited);
    metering.used(limited);
    assert.deepEqual(seen, ['a:limited', 'b:limited']);
  });
});

describe('judgeClaim reasons, as the user reads them', () => {
  const claim = (uid: string, proved: boolean): Claim => ({
    key: { namespace: 'ns', name: uid },
    uid,
    account: 'default',
    proved,
  });
  const ask = (q: Partial<ClaimQuestion>) =>
    judgeClaim({
      uid: 'me',
      id: '1',
      statusId: undefined,
      claims: [],
      marker: undefined,
      isLive: () => true,
      ...q,
    });

  test('names why, without naming the other resource', () => {
    assert.deepEqual(ask({ claims: [claim('other', true)] }), {
      holds: false,
      reason: 'another resource already manages it',
    });
    assert.deepEqual(ask({ marker: 'other' }), {
      holds: false,
      reason: 'it was created for another resource, which still exists',
    });
    assert.deepEqual(ask({ claims: [claim('me', false), claim('other', false)] }), {
      holds: false,
      reason: 'another resource names it too, and neither has proved it is its own',
    });
  });
});
