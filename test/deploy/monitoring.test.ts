import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { dump, load } from 'js-yaml';
import { Registry } from 'prom-client';
import { createClientMetrics } from '../../src/api/client-metrics.ts';
import { RuntimeMetrics } from '../../src/controller/metrics.ts';
import { FleetMetrics } from '../../src/managed/core/fleet-metrics.ts';
import { API_VERSION, serverlessEndpointKind } from '../../src/resources/kinds.ts';
import { registerSpendMetrics } from '../../src/resources/provider-config/spend-metrics.ts';
import { DASHBOARD_FILE, dashboardQueries } from '../../tools/grafana/dashboard.ts';
import { REPO_ROOT } from '../../tools/helm/artifacts.ts';
import { ensurePromtool } from '../../tools/prometheus/ensure.ts';
import { alertGroups, DEFAULT_THRESHOLDS, RULES_FILE } from '../../tools/prometheus/rules.ts';
import { NAMESPACE, renderChart } from './chart-render.ts';

// The dashboard and the alert rules against what the operator exports, and the rules through the real
// promtool (built from the Prometheus Go module): checked, and unit-tested to fire and not to fire.
const run = promisify(execFile);

/** Every metric name the operator exports, from its own registries. */
async function exportedNames(): Promise<Set<string>> {
  const registry = new Registry();
  new RuntimeMetrics(registry);
  createClientMetrics(registry, 'default');
  new FleetMetrics(registry, () => true);
  registerSpendMetrics(registry, new Map());
  const names = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    names.add(metric.name);
    if (String(metric.type) === 'histogram') {
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
    }
  }
  return names;
}

/** The metric names a PromQL expression reads: identifiers in our namespaces, not functions or labels. */
function metricsIn(expr: string): string[] {
  return [...expr.matchAll(/\b((?:gpucloud|controller_runtime|workqueue|leader_election)_[a-z_]+)\b/g)].map(
    (match) => match[1] ?? '',
  );
}

test('every query of the dashboard names a metric the operator exports', async () => {
  const exported = await exportedNames();
  const queries = dashboardQueries();
  assert.ok(queries.length >= 15);
  for (const query of queries) {
    const names = metricsIn(query);
    assert.ok(names.length > 0, `${query} reads no metric of ours`);
    for (const name of names) assert.ok(exported.has(name), `${query}: ${name} is not exported`);
  }
  const committed = JSON.parse(await readFile(join(REPO_ROOT, DASHBOARD_FILE), 'utf8')) as {
    panels: Array<{ targets?: Array<{ expr: string }> }>;
  };
  const shipped = committed.panels.flatMap((panel) => panel.targets?.map((target) => target.expr) ?? []);
  assert.deepEqual(shipped, queries);
});

test('the KEDA example scales a ServerlessEndpoint on an exported queue metric', async () => {
  const scaled = load(await readFile(join(REPO_ROOT, 'examples', 'keda', 'scaledobject.yaml'), 'utf8')) as {
    spec: {
      scaleTargetRef: { apiVersion: string; kind: string; name: string };
      triggers: Array<{ type: string; metadata: { query: string } }>;
    };
  };
  assert.deepEqual(scaled.spec.scaleTargetRef, {
    apiVersion: API_VERSION,
    kind: serverlessEndpointKind.kind,
    name: 'sd-inference',
  });
  assert.ok(serverlessEndpointKind.scale, 'the target kind has the scale subresource KEDA writes through');
  const [trigger] = scaled.spec.triggers;
  assert.equal(trigger?.type, 'prometheus');
  const exported = await exportedNames();
  const names = metricsIn(trigger?.metadata.query ?? '');
  assert.deepEqual(names, ['gpucloud_endpoint_tasks']);
  assert.ok(names.every((name) => exported.has(name)));
});

test('every alert reads metrics the operator exports', async () => {
  const exported = await exportedNames();
  for (const rule of alertGroups(DEFAULT_THRESHOLDS).flatMap((group) => group.rules)) {
    for (const name of metricsIn(rule.expr)) assert.ok(exported.has(name), `${rule.alert}: ${name}`);
  }
});

describe('the alert rules through promtool', () => {
  let promtool: string;
  let dir: string;
  before(async () => {
    promtool = await ensurePromtool();
    dir = await mkdtemp(join(tmpdir(), 'gpucloud-rules-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('promtool check rules accepts the plain rules file', async () => {
    const { stdout } = await run(promtool, ['check', 'rules', join(REPO_ROOT, RULES_FILE)]);
    assert.match(stdout, /SUCCESS: 8 rules found/);
  });

  test('promtool test rules: each alert fires on its series and stays quiet short of them', async () => {
    const { stdout } = await run(promtool, [
      'test',
      'rules',
      join(REPO_ROOT, 'test', 'prometheus', 'rules.test.yaml'),
    ]);
    assert.match(stdout, /SUCCESS/);
  });

  test("the chart's PrometheusRule renders the same rules, with the budget from values", async () => {
    const rendered = await renderChart({
      values: {
        metrics: {
          prometheusRule: { enabled: true, budgetAlertPercent: 75, labels: { release: 'kps' } },
        },
      },
    });
    const rule = rendered.one('PrometheusRule');
    assert.equal(rule.metadata?.namespace, NAMESPACE);
    assert.equal(rule.metadata?.labels?.release, 'kps');
    const { groups } = rule.spec as { groups: unknown };
    const path = join(dir, 'chart-rules.yaml');
    await writeFile(path, dump({ groups }));
    const { stdout } = await run(promtool, ['check', 'rules', path]);
    assert.match(stdout, /SUCCESS: 8 rules found/);
    const expected = alertGroups({ ...DEFAULT_THRESHOLDS, budgetAlertPercent: '75' });
    assert.deepEqual(
      load(dump(groups)),
      load(dump(expected)),
      'Prometheus templates survive Helm, values fill in',
    );
  });

  test('the chart ships the dashboard as a ConfigMap for the Grafana sidecar, off by default', async () => {
    assert.equal((await renderChart()).all('ConfigMap').length, 0);
    assert.equal((await renderChart()).all('PrometheusRule').length, 0);
    const rendered = await renderChart({ values: { metrics: { grafanaDashboard: { enabled: true } } } });
    const map = rendered.one('ConfigMap') as {
      metadata: { labels: Record<string, string> };
      data: Record<string, string>;
    };
    assert.equal(map.metadata.labels.grafana_dashboard, '1');
    assert.deepEqual(
      JSON.parse(map.data['gpucloud-operator.json'] ?? ''),
      JSON.parse(await readFile(join(REPO_ROOT, DASHBOARD_FILE), 'utf8')),
    );
  });
});
