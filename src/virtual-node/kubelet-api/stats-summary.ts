// `GET /stats/summary`: the kubelet's summary API (stats/v1alpha1), the part metrics-server before 0.6 and
// `kubectl get --raw /api/v1/nodes/<node>/proxy/stats/summary` read: the node's and each running Pod's CPU
// and memory, with the time of each. Fields a kubelet has from cgroups (file systems, network, rlimits)
// are left out: a cloud pod's are not known here. Pure.
import type { NodeUsage, PodUsage } from '../node-usage.ts';

interface CpuStats {
  time: string;
  usageNanoCores: number;
  usageCoreNanoSeconds: number;
}

interface MemoryStats {
  time: string;
  workingSetBytes: number;
}

export function statsSummary(usage: NodeUsage): Record<string, unknown> {
  const time = iso(usage.at);
  return {
    node: {
      nodeName: usage.node,
      startTime: iso(usage.startTime),
      cpu: cpuStats(usage.cpu, time),
      memory: { time, workingSetBytes: usage.workingSetBytes },
    },
    pods: usage.pods.map((pod) => podStats(pod, time)),
  };
}

function podStats(pod: PodUsage, time: string): Record<string, unknown> {
  const figures = {
    ...(pod.cpu ? { cpu: cpuStats(pod.cpu, time) } : {}),
    ...(pod.workingSetBytes === undefined ? {} : { memory: memoryStats(pod.workingSetBytes, time) }),
  };
  return {
    podRef: { name: pod.name, namespace: pod.namespace, uid: pod.uid },
    startTime: iso(pod.startTime),
    // The Pod's one container is its cloud pod: the same figures.
    containers: [{ name: pod.container, startTime: iso(pod.startTime), ...figures }],
    ...figures,
  };
}

function cpuStats(cpu: NodeUsage['cpu'], time: string): CpuStats {
  return { time, usageNanoCores: cpu.nanoCores, usageCoreNanoSeconds: cpu.coreNanoSeconds };
}

function memoryStats(workingSetBytes: number, time: string): MemoryStats {
  return { time, workingSetBytes };
}

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
