// `GET /metrics/resource`: the kubelet's resource metrics in the Prometheus text format, what
// metrics-server 0.6 and later scrape for `kubectl top` (node, Pod and container CPU time and working
// set, each container's start time, and scrape_error), with the time of each sample. Pure.
import type { NodeUsage } from '../node-usage.ts';

type Labels = Readonly<Record<string, string>>;

interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge';
  readonly samples: readonly { readonly labels: Labels; readonly value: number }[];
}

export const RESOURCE_METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function resourceMetrics(usage: NodeUsage): string {
  const seconds = (nanoSeconds: number) => nanoSeconds / 1e9;
  const withCpu = usage.pods.flatMap((pod) => (pod.cpu ? [{ pod, cpu: pod.cpu }] : []));
  const withMemory = usage.pods.flatMap((pod) =>
    pod.workingSetBytes === undefined ? [] : [{ pod, bytes: pod.workingSetBytes }],
  );
  const podLabels = (pod: NodeUsage['pods'][number]) => ({ namespace: pod.namespace, pod: pod.name });
  const containerLabels = (pod: NodeUsage['pods'][number]) => ({
    container: pod.container,
    ...podLabels(pod),
  });
  const families: Family[] = [
    {
      name: 'container_cpu_usage_seconds_total',
      help: '[STABLE] Cumulative cpu time consumed by the container in core-seconds',
      type: 'counter',
      samples: withCpu.map(({ pod, cpu }) => ({
        labels: containerLabels(pod),
        value: seconds(cpu.coreNanoSeconds),
      })),
    },
    {
      name: 'container_memory_working_set_bytes',
      help: '[STABLE] Current working set of the container in bytes',
      type: 'gauge',
      samples: withMemory.map(({ pod, bytes }) => ({ labels: containerLabels(pod), value: bytes })),
    },
    {
      name: 'container_start_time_seconds',
      help: '[STABLE] Start time of the container since unix epoch in seconds',
      type: 'gauge',
      samples: usage.pods.map((pod) => ({ labels: containerLabels(pod), value: pod.startTime / 1000 })),
    },
    {
      name: 'node_cpu_usage_seconds_total',
      help: '[STABLE] Cumulative cpu time consumed by the node in core-seconds',
      type: 'counter',
      samples: [{ labels: {}, value: seconds(usage.cpu.coreNanoSeconds) }],
    },
    {
      name: 'node_memory_working_set_bytes',
      help: '[STABLE] Current working set of the node in bytes',
      type: 'gauge',
      samples: [{ labels: {}, value: usage.workingSetBytes }],
    },
    {
      name: 'pod_cpu_usage_seconds_total',
      help: '[STABLE] Cumulative cpu time consumed by the pod in core-seconds',
      type: 'counter',
      samples: withCpu.map(({ pod, cpu }) => ({
        labels: podLabels(pod),
        value: seconds(cpu.coreNanoSeconds),
      })),
    },
    {
      name: 'pod_memory_working_set_bytes',
      help: '[STABLE] Current working set of the pod in bytes',
      type: 'gauge',
      samples: withMemory.map(({ pod, bytes }) => ({ labels: podLabels(pod), value: bytes })),
    },
  ];
  const stamp = ` ${usage.at}`;
  const lines = families.flatMap(({ name, help, type, samples }) => [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} ${type}`,
    ...samples.map(({ labels, value }) => `${name}${labelText(labels)} ${value}${stamp}`),
  ]);
  lines.push(
    '# HELP scrape_error [ALPHA] 1 if there was an error while getting container metrics, 0 otherwise',
    '# TYPE scrape_error gauge',
    `scrape_error ${usage.incomplete ? 1 : 0}`,
  );
  return `${lines.join('\n')}\n`;
}

function labelText(labels: Labels): string {
  const pairs = Object.entries(labels).map(([key, value]) => `${key}="${escapeLabel(value)}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
