// Installs what the tests need that npm does not bring (the local control plane binary with
// kube-controller-manager, kube-scheduler and the kubelet; the node's containerd, runc, CNI plugins and
// sandbox image; helm, promtool, metrics-server, the Argo CD health script runner and the operator's image), so that
// `npm test` works on a fresh machine. Each step is cached and idempotent.
import { ensureHealthRunner } from './argocd-health/ensure.ts';
import { ensureControlPlaneBinary } from './controlplane/build.ts';
import { ensureHelm, HELM_VERSION } from './helm/ensure.ts';
import { ensureImage } from './image/ensure.ts';
import { ensureMetricsServer, METRICS_SERVER_VERSION } from './metrics-server/ensure.ts';
import { ensureNode } from './node/ensure.ts';
import { ensurePromtool, PROMETHEUS_MODULE_VERSION } from './prometheus/ensure.ts';

const steps: Array<{ name: string; run: () => Promise<void> }> = [
  {
    name: 'control plane binary (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet)',
    run: async () => {
      const binary = await ensureControlPlaneBinary((line) => console.log(`  ${line}`));
      console.log(`  ${binary}`);
    },
  },
  {
    name: 'local node (containerd, runc and CNI plugins from Debian; the sandbox image)',
    run: () => ensureNode((line) => console.log(`  ${line}`)),
  },
  {
    name: `helm ${HELM_VERSION}`,
    run: async () => console.log(`  ${await ensureHelm()}`),
  },
  {
    name: `promtool (Prometheus module ${PROMETHEUS_MODULE_VERSION})`,
    run: async () => console.log(`  ${await ensurePromtool()}`),
  },
  {
    name: `metrics-server ${METRICS_SERVER_VERSION}`,
    run: async () => console.log(`  ${await ensureMetricsServer()}`),
  },
  {
    name: 'Argo CD health script runner (gopher-lua)',
    run: async () => console.log(`  ${await ensureHealthRunner()}`),
  },
  {
    name: 'the operator image (buildah, from the Dockerfile)',
    run: async () => console.log(`  ${(await ensureImage((line) => console.log(`  ${line}`))).archive}`),
  },
];

for (const step of steps) {
  console.log(`prepare: ${step.name}`);
  await step.run();
}
