import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resourceMetrics } from '../../src/virtual-node/kubelet-api/resource-metrics.ts';
import { statsSummary } from '../../src/virtual-node/kubelet-api/stats-summary.ts';
import type { NodeUsage } from '../../src/virtual-node/node-usage.ts';

// The node's usage in the kubelet's two shapes: the summary API's JSON and the resource metrics' text,
// with the names and units metrics-server reads.
const AT = Date.parse('2026-03-01T10:00:30Z');
const usage: NodeUsage = {
  node: 'gpucloud-team-a',
  at: AT,
  startTime: Date.parse('2026-03-01T09:00:00Z'),
  cpu: { nanoCores: 2_500_000_000, coreNanoSeconds: 90_000_000_000 },
  workingSetBytes: 3_000_000,
  pods: [
    {
      namespace: 'team-a',
      name: 'trainer',
      uid: 'u-1',
      container: 'main',
      startTime: Date.parse('2026-03-01T09:30:00Z'),
      cpu: { nanoCores: 2_500_000_000, coreNanoSeconds: 4_500_000_000_000 },
      workingSetBytes: 3_000_000,
    },
    // Its vCPUs unknown: memory only.
    {
      namespace: 'team-a',
      name: 'odd',
      uid: 'u-2',
      container: 'c',
      startTime: Date.parse('2026-03-01T09:45:00Z'),
      cpu: undefined,
      workingSetBytes: 0,
    },
  ],
  incomplete: false,
};

describe('the virtual node’s usage as a kubelet reports it', () => {
  test('/stats/summary: the node, and each Pod with its one container, CPU and memory with their time', () => {
    const time = '2026-03-01T10:00:30Z';
    const cpu = { time, usageNanoCores: 2_500_000_000, usageCoreNanoSeconds: 4_500_000_000_000 };
    const memory = { time, workingSetBytes: 3_000_000 };
    assert.deepEqual(statsSummary(usage), {
      node: {
        nodeName: 'gpucloud-team-a',
        startTime: '2026-03-01T09:00:00Z',
        cpu: { time, usageNanoCores: 2_500_000_000, usageCoreNanoSeconds: 90_000_000_000 },
        memory: { time, workingSetBytes: 3_000_000 },
      },
      pods: [
        {
          podRef: { name: 'trainer', namespace: 'team-a', uid: 'u-1' },
          startTime: '2026-03-01T09:30:00Z',
          containers: [{ name: 'main', startTime: '2026-03-01T09:30:00Z', cpu, memory }],
          cpu,
          memory,
        },
        {
          podRef: { name: 'odd', namespace: 'team-a', uid: 'u-2' },
          startTime: '2026-03-01T09:45:00Z',
          containers: [
            { name: 'c', startTime: '2026-03-01T09:45:00Z', memory: { time, workingSetBytes: 0 } },
          ],
          memory: { time, workingSetBytes: 0 },
        },
      ],
    });
  });

  test('/metrics/resource: each family metrics-server scrapes, in seconds and bytes, stamped in ms', () => {
    const lines = resourceMetrics(usage).split('\n');
    const samples = lines.filter((line) => line !== '' && !line.startsWith('#'));
    assert.deepEqual(samples, [
      `container_cpu_usage_seconds_total{container="main",namespace="team-a",pod="trainer"} 4500 ${AT}`,
      `container_memory_working_set_bytes{container="main",namespace="team-a",pod="trainer"} 3000000 ${AT}`,
      `container_memory_working_set_bytes{container="c",namespace="team-a",pod="odd"} 0 ${AT}`,
      `container_start_time_seconds{container="main",namespace="team-a",pod="trainer"} 1772357400 ${AT}`,
      `container_start_time_seconds{container="c",namespace="team-a",pod="odd"} 1772358300 ${AT}`,
      `node_cpu_usage_seconds_total 90 ${AT}`,
      `node_memory_working_set_bytes 3000000 ${AT}`,
      `pod_cpu_usage_seconds_total{namespace="team-a",pod="trainer"} 4500 ${AT}`,
      `pod_memory_working_set_bytes{namespace="team-a",pod="trainer"} 3000000 ${AT}`,
      `pod_memory_working_set_bytes{namespace="team-a",pod="odd"} 0 ${AT}`,
      'scrape_error 0',
    ]);
    assert.ok(lines.includes('# TYPE container_cpu_usage_seconds_total counter'));
    assert.ok(lines.includes('# TYPE node_memory_working_set_bytes gauge'));
    assert.equal(lines.at(-1), '', 'ends with a newline');
    assert.match(resourceMetrics({ ...usage, incomplete: true }), /^scrape_error 1$/m);
  });
});
