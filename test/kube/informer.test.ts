import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KubeClient } from '../../src/kube/client.ts';
import { Informer, type InformerOptions } from '../../src/kube/informer.ts';
import type { DeepReadonly } from '../../src/kube/object.ts';
import { configMaps } from '../../src/kube/resource-type.ts';
import { useControlPlane } from '../support/control-plane.ts';
import {
  type ConfigMap,
  connectionVia,
  createConfigMap,
  createNamespace,
  deleteConfigMap,
  patchConfigMap,
} from '../support/kube.ts';
import { captureLogs } from '../support/log-capture.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { until } from '../support/until.ts';

const plane = useControlPlane();
const logs = captureLogs('info');

type Seen = { type: 'add' | 'update' | 'delete' | 'resync'; name: string; value?: string; old?: string };

/** Starts an informer on ConfigMaps that records every event it delivers; stopped after the file. */
const running: Informer<ConfigMap>[] = [];
function watchConfigMaps(client: KubeClient, options: Omit<InformerOptions, 'resource'>) {
  const informer = new Informer<ConfigMap>(client, { resource: configMaps, ...options }, logs.logger);
  const seen: Seen[] = [];
  const value = (obj: DeepReadonly<ConfigMap>) => obj.data?.value;
  informer.addEventHandler({
    onAdd: (obj) => seen.push({ type: 'add', name: obj.metadata.name, value: value(obj) }),
    onUpdate: (old, obj) =>
      seen.push({ type: 'update', name: obj.metadata.name, value: value(obj), old: value(old) }),
    onDelete: (obj) => seen.push({ type: 'delete', name: obj.metadata.name }),
    onResync: (obj) => seen.push({ type: 'resync', name: obj.metadata.name }),
  });
  informer.start();
  running.push(informer);
  return { informer, seen };
}

after(() => Promise.all(running.map((informer) => informer.stop())));

const has = (seen: Seen[], expected: Seen) =>
  seen.some((s) => JSON.stringify(s) === JSON.stringify(expected));

describe('Informer against a real apiserver', () => {
  let client: KubeClient;
  before(() => {
    client = new KubeClient(plane().connection);
  });

  test('lists what exists, then delivers adds, updates and deletes', async () => {
    const ns = await createNamespace(client, 'inf-basic');
    await createConfigMap(client, ns, 'one', { value: '1' });
    await createConfigMap(client, ns, 'two', { value: '2' });
    const { informer, seen } = watchConfigMaps(client, { namespace: ns });
    assert.equal(await informer.waitForSync(), true);
    assert.equal(informer.hasSynced(), true);
    assert.equal(informer.store.size, 2);
    const one = informer.store.get({ namespace: ns, name: 'one' });
    assert.equal(one?.data?.value, '1');
    assert.equal(one?.apiVersion, 'v1', 'list items get their apiVersion filled in');
    assert.equal(one?.kind, 'ConfigMap');

    await createConfigMap(client, ns, 'three', { value: '3' });
    await patchConfigMap(client, ns, 'one', { value: '1b' });
    await deleteConfigMap(client, ns, 'two');
    await until(() => has(seen, { type: 'delete', name: 'two' }), 'the delete event');

    assert.deepEqual(seen, [
      { type: 'add', name: 'one', value: '1' },
      { type: 'add', name: 'two', value: '2' },
      { type: 'add', name: 'three', value: '3' },
      { type: 'update', name: 'one', value: '1b', old: '1' },
      { type: 'delete', name: 'two' },
    ]);
    assert.deepEqual([...informer.store.values()].map((cm) => cm.metadata.name).sort(), ['one', 'three']);
    assert.equal(informer.store.getByKey(`${ns}/one`)?.data?.value, '1b');
  });

  test('honours label and field selectors, and watches all namespaces without one', async () => {
    const a = await createNamespace(client, 'inf-sel-a');
    const b = await createNamespace(client, 'inf-sel-b');
    const label = `sel-${process.pid}-${Date.now()}`;
    await createConfigMap(client, a, 'match-a', {}, { app: label });
    await createConfigMap(client, b, 'match-b', {}, { app: label });
    await createConfigMap(client, a, 'other', {}, { app: 'other' });
    const byLabel = watchConfigMaps(client, { labelSelector: `app=${label}` });
    const byField = watchConfigMaps(client, { namespace: a, fieldSelector: 'metadata.name=other' });
    await Promise.all([byLabel.informer.waitForSync(), byField.informer.waitForSync()]);
    assert.deepEqual(
      [...byLabel.informer.store.values()].map((cm) => `${cm.metadata.namespace}/${cm.metadata.name}`).sort(),
      [`${a}/match-a`, `${b}/match-b`],
    );
    assert.deepEqual(
      [...byField.informer.store.values()].map((cm) => cm.metadata.name),
      ['other'],
    );
    await createConfigMap(client, b, 'late', {}, { app: label });
    await until(() => has(byLabel.seen, { type: 'add', name: 'late' }), 'the late add');
    assert.equal(byField.informer.store.size, 1);
  });

  test('reads a list larger than one page', async () => {
    const ns = await createNamespace(client, 'inf-pages');
    await Promise.all(Array.from({ length: 60 }, (_, i) => createConfigMap(client, ns, `cm-${i}`)));
    const { informer } = watchConfigMaps(client, { namespace: ns, pageSize: 7 });
    await informer.waitForSync();
    assert.equal(informer.store.size, 60);
  });

  test('re-delivers every cached object at each resync', async () => {
    const ns = await createNamespace(client, 'inf-resync');
    await createConfigMap(client, ns, 'a');
    await createConfigMap(client, ns, 'b');
    const { informer, seen } = watchConfigMaps(client, { namespace: ns, resyncPeriodMs: 50 });
    await informer.waitForSync();
    const resyncs = (name: string) => seen.filter((s) => s.type === 'resync' && s.name === name).length;
    await until(() => resyncs('a') >= 2 && resyncs('b') >= 2, 'two resyncs of each object');
  });

  test('replays the cache to a handler added after sync, and survives a handler that throws', async () => {
    const ns = await createNamespace(client, 'inf-late');
    await createConfigMap(client, ns, 'a');
    const { informer } = watchConfigMaps(client, { namespace: ns });
    await informer.waitForSync();
    informer.addEventHandler({
      onAdd() {
        throw new Error('handler bug');
      },
    });
    const late: string[] = [];
    informer.addEventHandler({ onAdd: (obj) => late.push(obj.metadata.name) });
    assert.deepEqual(late, ['a']);
    await createConfigMap(client, ns, 'b');
    await until(() => late.includes('b'), 'the add after the throwing handler');
  });

  test('re-watches when a watch stalls on a silent connection', async () => {
    const proxy = await TcpProxy.start(new URL(plane().server));
    try {
      const ns = await createNamespace(client, 'inf-stall');
      const viaProxy = new KubeClient(connectionVia(plane(), proxy.url));
      const { informer, seen } = watchConfigMaps(viaProxy, {
        namespace: ns,
        stallTimeoutMs: 1_000,
        initialBackoffMs: 50,
      });
      await informer.waitForSync();
      proxy.freeze();
      await createConfigMap(client, ns, 'after-freeze');
      await until(() => has(seen, { type: 'add', name: 'after-freeze' }), 'the event behind the frozen link');
      assert.ok(informer.stats.stalls >= 1);
      assert.equal(informer.stats.lists, 1, 'a stalled watch resumes from its resource version, no relist');
      await informer.stop();
    } finally {
      await proxy.close();
    }
  });
});

describe('Informer across apiserver restarts', () => {
  let client: KubeClient;
  before(() => {
    client = new KubeClient(plane().connection);
  });

  test('recovers when the apiserver restarts', async () => {
    const ns = await createNamespace(client, 'inf-restart');
    const { informer, seen } = watchConfigMaps(client, {
      namespace: ns,
      initialBackoffMs: 100,
      maxBackoffMs: 1_000,
    });
    await informer.waitForSync();
    await plane().stopApiserver();
    await plane().startApiserver();
    await createConfigMap(client, ns, 'after-restart');
    await until(() => has(seen, { type: 'add', name: 'after-restart' }), 'the add after the restart');
  });

  test('relists after 410 Gone and delivers what it missed, deletions included', async () => {
    const proxy = await TcpProxy.start(new URL(plane().server));
    try {
      const ns = await createNamespace(client, 'inf-gone');
      await createConfigMap(client, ns, 'kept', { value: 'old' });
      await createConfigMap(client, ns, 'removed');
      const viaProxy = new KubeClient(connectionVia(plane(), proxy.url));
      const { informer, seen } = watchConfigMaps(viaProxy, {
        namespace: ns,
        initialBackoffMs: 100,
        maxBackoffMs: 1_000,
      });
      await informer.waitForSync();
      proxy.cut();
      await patchConfigMap(client, ns, 'kept', { value: 'new' });
      await deleteConfigMap(client, ns, 'removed');
      await createConfigMap(client, ns, 'created');
      // A restarted apiserver keeps no watch history from before: resuming the informer's old
      // resource version must fail with 410 Gone, and only a relist can catch up.
      await plane().stopApiserver();
      await plane().startApiserver();
      proxy.resume();
      await until(
        () =>
          has(seen, { type: 'delete', name: 'removed' }) &&
          has(seen, { type: 'add', name: 'created' }) &&
          has(seen, { type: 'update', name: 'kept', value: 'new', old: 'old' }),
        'the missed changes',
      );
      assert.equal(informer.stats.lists, 2, 'one relist');
      assert.ok(informer.stats.failures >= 1, 'the cut link was noticed');
      assert.ok(logs.lines.some((line) => line.msg === 'resource version expired; relisting'));
      assert.deepEqual([...informer.store.values()].map((cm) => cm.metadata.name).sort(), [
        'created',
        'kept',
      ]);
      await informer.stop();
    } finally {
      await proxy.close();
    }
  });
});
