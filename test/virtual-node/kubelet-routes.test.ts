import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { routeRequest } from '../../src/virtual-node/kubelet-api/routes.ts';

// The kubelet API's paths and the attributes each is reviewed with: the kubelet's own (auth.go), so that
// a grant that works on a kubelet works on a gpucloud node, and no path is reviewed more loosely.
describe('kubelet API routes', () => {
  test('each path is reviewed with the subresource the kubelet asks, and the verb of its method', () => {
    const cases: [string, string, string, string][] = [
      ['GET', '/containerLogs/team-a/p/main', 'get', 'proxy'],
      ['POST', '/exec/team-a/p/main', 'create', 'proxy'],
      ['GET', '/exec/team-a/p/main', 'get', 'proxy'],
      ['GET', '/stats/summary', 'get', 'stats'],
      ['GET', '/stats', 'get', 'stats'],
      ['GET', '/metrics/resource', 'get', 'metrics'],
      ['GET', '/logs/syslog', 'get', 'log'],
      ['GET', '/statsfoo', 'get', 'proxy'],
      ['DELETE', '/pods', 'delete', 'proxy'],
    ];
    for (const [method, path, verb, subresource] of cases) {
      const routed = routeRequest(method, path);
      assert.equal(routed?.verb, verb, `${method} ${path}`);
      assert.equal(routed?.subresource, subresource, `${method} ${path}`);
    }
  });

  test('a method the kubelet maps to no verb is refused before any review', () => {
    assert.equal(routeRequest('OPTIONS', '/containerLogs/a/b/c'), undefined);
    assert.equal(routeRequest('HEAD', '/stats/summary'), undefined);
  });

  test('container logs, the streaming operations, the stats summary and the resource metrics are routed; anything else is not found', () => {
    assert.deepEqual(routeRequest('GET', '/containerLogs/team-a/p%2Dx/main')?.route, {
      kind: 'containerLogs',
      pod: { namespace: 'team-a', name: 'p-x' },
      container: 'main',
    });
    assert.deepEqual(routeRequest('POST', '/exec/team-a/p/uid-1/main')?.route, {
      kind: 'streaming',
      operation: 'exec',
      pod: { namespace: 'team-a', name: 'p' },
    });
    assert.deepEqual(routeRequest('POST', '/portForward/team-a/p')?.route, {
      kind: 'streaming',
      operation: 'portForward',
      pod: { namespace: 'team-a', name: 'p' },
    });
    assert.equal(routeRequest('GET', '/stats/summary/')?.route.kind, 'statsSummary');
    assert.equal(routeRequest('GET', '/metrics/resource')?.route.kind, 'resourceMetrics');
    assert.equal(routeRequest('POST', '/metrics/resource')?.route.kind, 'notFound');
    for (const path of [
      '/containerLogs/team-a/p',
      '/containerLogs/team-a/p/main/extra',
      '/containerLogs/team-a//main',
      '/containerLogs/%E0%A4%A/p/main',
      '/stats/summary/more',
      '/metrics/resource/more',
      '/metrics/cadvisor',
      '/configz',
    ])
      assert.equal(routeRequest('GET', path)?.route.kind, 'notFound', path);
    assert.equal(routeRequest('POST', '/containerLogs/team-a/p/main')?.route.kind, 'notFound');
  });
});
