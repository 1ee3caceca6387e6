#!/usr/bin/env node
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../lib/logger.ts';
// The whole local stack in one command: a real kube-apiserver + etcd + kube-controller-manager +
// kube-scheduler, the simulated GPU cloud, the CRDs, the operator and the examples (whose ProviderConfig
// registers a virtual node); with --node (`npm run local --node`, which
// npm hands over as npm_config_node) also a scheduler and a real node that runs Pods. Ctrl-C tears
// everything down.
import { startLocalStack } from '../local/stack.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'info', name: 'gpucloud-operator' });
const node = process.argv.includes('--node') || process.env.npm_config_node === 'true';
const stack = await startLocalStack(logger, { node });
const kubectl = `kubectl --kubeconfig ${stack.kubeconfigPath}`;
console.error(`
gpucloud-operator local stack is up.
  cloud simulator   ${stack.simulatorUrl}
  kubeconfig        ${stack.kubeconfigPath}
  metrics           ${stack.metricsUrl}   (fleet: gpucloud_gpus_running, gpucloud_spend_rate_dollars_per_hour, ...)
  controllers       ${stack.controllers.controllers.map((name) => name.replace(/-controller$/, '')).join(', ')}
                    (kube-controller-manager, log: ${stack.controllers.logPath}), and kube-scheduler
  virtual node      gpucloud-team-a (examples/providerconfig-team-a.yaml): ${kubectl} get nodes -l gpucloud.io/virtual-node=true
${
  stack.nodeName
    ? `  node              ${stack.nodeName} Ready: ${kubectl} get nodes -o wide
`
    : ''
}
Try, in another terminal:
  ${kubectl} get gpucloud                      # every GpuPod, GpuVm, ServerlessEndpoint, ServerlessTask and ProviderConfig
  curl -s ${stack.metricsUrl} | grep '^gpucloud_gpus_running'
  ${kubectl} wait gpupod/jupyter --for=condition=Ready --timeout=60s
  ${kubectl} patch gpupod jupyter --type merge -p '{"spec":{"paused":true}}'
  ${kubectl} scale serverlessendpoint/sd-inference --replicas=4
  ${kubectl} describe gpupod jupyter           # status, conditions and events
  ${kubectl} get pods -l app=inference -o wide # the example Deployment, Running on the virtual node
  ${kubectl} logs -f deployment/inference      # its cloud pod's log, through the node's kubelet API
  ${kubectl} delete gpupod jupyter

The gpucloud CLI (also "kubectl gpucloud"), with the simulator's key — paste into that terminal:
  export KUBECONFIG=${stack.kubeconfigPath}
  export GPUCLOUD_API_URL=${stack.simulatorUrl} GPUCLOUD_API_KEY=${stack.apiKey}
  export PATH="${ROOT}bin:${dirname(process.execPath)}:$PATH"
  echo '{"prompt":"a lighthouse at dusk"}' | gpucloud tasks submit sle/sd-inference -f - --task-id first_task
  gpucloud tasks watch sle/sd-inference first_task
  gpucloud logs gpupod/jupyter --follow
  gpucloud metrics gpupod/jupyter
  gpucloud offers --gpu "NVIDIA GeForce RTX 4090"
  gpucloud vm-types
  gpucloud ssh gpupod/jupyter
  gpucloud cost

Without a key, as a tenant would (the tenant API, through the apiserver as your kubeconfig identity):
  env -u GPUCLOUD_API_KEY gpucloud logs gpupod/jupyter --follow -v
  ${kubectl} get --raw /apis/tenant.gpucloud.io/v1alpha1/namespaces/default/gpupods/jupyter/metrics

Ctrl-C stops everything.
`);

const stop = async () => {
  await stack.stop();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
