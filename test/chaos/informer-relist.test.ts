import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeClient } from '../../src/kube/client.ts';
import type { KubeConnection } from '../../src/kube/connection.ts';
import { Informer } from '../../src/kube/informer.ts';
import { configMaps } from '../../src/kube/resource-type.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { reply, startMisbehavingServer } from '../support/misbehaving-server.ts';

// Found by the chaos suite (watch-disruption): after an apiserver restart the informer's watch is
// answered 410 Gone — the server is back — yet it slept its whole backoff, grown during the outage to
// tens of seconds, before the relist its log announced. Changes waited that long to be seen.
const json = (body: unknown) => reply.text(200, `${JSON.stringify(body)}\n`, 'application/json');
const list = (resourceVersion: string, names: string[]) =>
  json({
    kind: 'ConfigMapList',
    metadata: { resourceVersion },
    items: names.map((name) => ({ metadata: { name, namespace: 'ns', resourceVersion } })),
  });

test('an informer relists at once after 410 Gone, whatever its backoff', async () => {
  const server = await startMisbehavingServer();
  const connection: KubeConnection = {
    server: server.url,
    source: 'misbehaving server',
    auth: async () => ({ headers: {}, tls: { rejectUnauthorized: false } }),
  };
  server.script(
    list('10', []),
    json({
      type: 'ERROR',
      object: { kind: 'Status', code: 410, message: 'too old resource version: 10 (20)' },
    }),
    list('20', ['after']),
    reply.hang(),
  );
  const informer = new Informer(
    new KubeClient(connection),
    // A backoff far longer than the test: any sleep before the relist would time it out.
    { resource: configMaps, namespace: 'ns', initialBackoffMs: 600_000, maxBackoffMs: 600_000 },
    createLogger({ level: 'silent' }),
  );
  informer.start();
  try {
    await server.waitFor((requests) => requests.length >= 3, 10_000);
    const [first, watch, relist] = server.requests;
    assert.doesNotMatch(first?.url ?? '', /watch=true/);
    assert.match(watch?.url ?? '', /watch=true/);
    assert.doesNotMatch(relist?.url ?? '', /watch=true/, 'the request after the 410 is a relist');
    await server.waitFor(() => informer.store.getByKey('ns/after') !== undefined);
  } finally {
    await informer.stop();
    await server.close();
  }
});
