// The Grafana dashboard of the operator and its fleet, as code: deploy/grafana/gpucloud-operator.json and
// the chart's copy (shipped as a ConfigMap for the Grafana sidecar) are generated from it.

interface Panel {
  title: string;
  /** PromQL, one per series; `legend` names each series from its labels. */
  targets: ReadonlyArray<{ expr: string; legend: string }>;
  unit?: string;
  kind?: 'timeseries' | 'stat';
}

const rows: ReadonlyArray<{ title: string; panels: readonly Panel[] }> = [
  {
    title: 'Fleet',
    panels: [
      {
        title: 'GPUs running by model',
        targets: [{ expr: 'sum by (gpu_type) (gpucloud_gpus_running)', legend: '{{gpu_type}}' }],
      },
      {
        title: 'GPUs running by namespace',
        targets: [{ expr: 'sum by (namespace) (gpucloud_gpus_running)', legend: '{{namespace}}' }],
      },
      {
        title: 'Resources by kind and phase',
        targets: [{ expr: 'sum by (kind, phase) (gpucloud_resources)', legend: '{{kind}} {{phase}}' }],
      },
      {
        title: 'Time to Ready, p90',
        unit: 's',
        targets: [
          {
            expr: 'histogram_quantile(0.9, sum by (le, kind) (rate(gpucloud_time_to_ready_seconds_bucket[1h])))',
            legend: '{{kind}}',
          },
        ],
      },
    ],
  },
  {
    title: 'Spend',
    panels: [
      {
        title: 'Spend rate',
        kind: 'stat',
        unit: 'currencyUSD',
        targets: [{ expr: 'sum(gpucloud_spend_rate_dollars_per_hour)', legend: 'dollars per hour' }],
      },
      {
        title: 'Spend rate by namespace ($/h)',
        unit: 'currencyUSD',
        targets: [
          { expr: 'sum by (namespace) (gpucloud_spend_rate_dollars_per_hour)', legend: '{{namespace}}' },
        ],
      },
      {
        title: 'Estimated cost so far by namespace',
        unit: 'currencyUSD',
        targets: [{ expr: 'sum by (namespace) (gpucloud_estimated_cost_dollars)', legend: '{{namespace}}' }],
      },
    ],
  },
  {
    title: 'Serverless',
    panels: [
      {
        title: 'Queue depth (processing + delivered)',
        targets: [
          {
            expr: 'sum by (namespace, endpoint) (gpucloud_endpoint_tasks{status=~"processing|delivered"})',
            legend: '{{namespace}}/{{endpoint}}',
          },
        ],
      },
      {
        title: 'Workers, desired and running',
        targets: [
          {
            expr: 'sum by (namespace, endpoint, state) (gpucloud_endpoint_workers)',
            legend: '{{namespace}}/{{endpoint}} {{state}}',
          },
        ],
      },
      {
        title: 'Task outcomes',
        targets: [
          {
            expr: 'sum by (status) (gpucloud_endpoint_tasks{status=~"success|failed"})',
            legend: '{{status}}',
          },
        ],
      },
    ],
  },
  {
    title: 'Operator health',
    panels: [
      {
        title: 'Reconciles per second',
        unit: 'ops',
        targets: [
          {
            expr: 'sum by (controller, result) (rate(controller_runtime_reconcile_total[5m]))',
            legend: '{{controller}} {{result}}',
          },
        ],
      },
      {
        title: 'Reconcile errors and terminal failures',
        unit: 'ops',
        targets: [
          {
            expr: 'sum by (controller) (rate(controller_runtime_reconcile_errors_total[5m]))',
            legend: '{{controller}} errors',
          },
          {
            expr: 'sum by (kind, reason) (increase(gpucloud_terminal_failures_total[1h]))',
            legend: '{{kind}} {{reason}} (1h)',
          },
        ],
      },
      {
        title: 'Work queue depth',
        targets: [{ expr: 'sum by (name) (workqueue_depth)', legend: '{{name}}' }],
      },
      {
        title: 'Cloud API latency, p95',
        unit: 's',
        targets: [
          {
            expr: 'histogram_quantile(0.95, sum by (le, operation) (rate(gpucloud_api_request_duration_seconds_bucket[5m])))',
            legend: '{{operation}}',
          },
        ],
      },
      {
        title: 'Cloud API errors and throttling',
        unit: 'ops',
        targets: [
          {
            expr: 'sum by (code) (rate(gpucloud_api_requests_total{code!="10000"}[5m]))',
            legend: 'code {{code}}',
          },
          {
            expr: 'sum by (reason) (rate(gpucloud_api_retries_total[5m]))',
            legend: 'retried: {{reason}}',
          },
          {
            expr: 'sum(rate(gpucloud_api_rate_limiter_wait_seconds_sum[5m]))',
            legend: 'rate-limiter wait (s/s)',
          },
        ],
      },
      {
        title: 'Leader',
        targets: [{ expr: 'leader_election_master_status', legend: '{{pod}}' }],
      },
      {
        title: 'Drift and preemptions (1h)',
        targets: [
          { expr: 'sum by (kind) (increase(gpucloud_drift_detections_total[1h]))', legend: '{{kind}} drift' },
          { expr: 'sum by (kind) (increase(gpucloud_preemptions_total[1h]))', legend: '{{kind}} preempted' },
        ],
      },
    ],
  },
];

/** Every PromQL expression of the dashboard, for the test that checks they name exported metrics. */
export function dashboardQueries(): string[] {
  return rows.flatMap((row) => row.panels.flatMap((panel) => panel.targets.map((target) => target.expr)));
}

export const DASHBOARD_FILE = 'deploy/grafana/gpucloud-operator.json';

/** The dashboard in Grafana's JSON model, on a `datasource` variable of type prometheus. */
export function dashboardJson(): string {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JavaScript template
  const datasource = { type: 'prometheus', uid: '${datasource}' };
  const panels: unknown[] = [];
  let id = 1;
  let y = 0;
  for (const row of rows) {
    panels.push({
      id: id++,
      type: 'row',
      title: row.title,
      collapsed: false,
      gridPos: { x: 0, y, w: 24, h: 1 },
    });
    y += 1;
    row.panels.forEach((panel, index) => {
      panels.push({
        id: id++,
        type: panel.kind ?? 'timeseries',
        title: panel.title,
        datasource,
        gridPos: { x: (index % 3) * 8, y: y + Math.floor(index / 3) * 8, w: 8, h: 8 },
        fieldConfig: { defaults: { unit: panel.unit ?? 'short' }, overrides: [] },
        options: {},
        targets: panel.targets.map((target, refIndex) => ({
          datasource,
          expr: target.expr,
          legendFormat: target.legend,
          refId: String.fromCharCode(65 + refIndex),
        })),
      });
    });
    y += Math.ceil(row.panels.length / 3) * 8;
  }
  const dashboard = {
    title: 'GPU cloud operator',
    uid: 'gpucloud-operator',
    description:
      'The GPU fleet, its spend, serverless queues and the operator that keeps them (gpucloud-operator).',
    tags: ['gpucloud'],
    editable: true,
    schemaVersion: 39,
    time: { from: 'now-6h', to: 'now' },
    refresh: '30s',
    templating: {
      list: [{ name: 'datasource', label: 'Prometheus', type: 'datasource', query: 'prometheus' }],
    },
    panels,
  };
  return `${JSON.stringify(dashboard, null, 2)}\n`;
}
