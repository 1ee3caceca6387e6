import { operations } from '../../api/operations.ts';
import type { MetricName, MetricsQuery } from '../../api/schemas/index.ts';
import type { Caller } from '../keys.ts';
import { podSeries, podStorage } from '../pods/metrics.ts';
import type { Simulation } from '../simulation.ts';
import { type Route, route } from './route.ts';

export function metricRoutes(sim: Simulation): Route[] {
  const { pods, ctx } = sim;
  const { metrics } = operations;
  const series =
    <Name extends MetricName>(name: Name) =>
    ({ caller, params, query }: { caller: Caller; params: { pod_id: string }; query: MetricsQuery }) => ({
      metric_name: name,
      series: podSeries(pods.get(caller, params.pod_id), name, query, ctx.clock.now()),
    });
  return [
    route(metrics.cpu, series('cpu_usage')),
    route(metrics.gpu, series('gpu_utilization')),
    route(metrics.memory, series('memory_usage')),
    route(metrics.gpuMemory, series('gpu_memory')),
    route(metrics.storage, ({ caller, params }) =>
      podStorage(pods.get(caller, params.pod_id), ctx.clock.now()),
    ),
  ];
}
