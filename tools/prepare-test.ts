// Installs what the tests need that npm does not bring (the local control plane binaries, helm and the
// Argo CD health script runner), so that `npm test` works on a fresh machine. Each step is cached and idempotent.
import { ensureHealthRunner } from './argocd-health/ensure.ts';
import { ensureControlPlaneBinary } from './controlplane/build.ts';
import { ensureHelm, HELM_VERSION } from './helm/ensure.ts';

const steps: Array<{ name: string; run: () => Promise<void> }> = [
  {
    name: 'control plane binary (etcd + kube-apiserver)',
    run: async () => {
      const binary = await ensureControlPlaneBinary((line) => console.log(`  ${line}`));
      console.log(`  ${binary}`);
    },
  },
  {
    name: `helm ${HELM_VERSION}`,
    run: async () => console.log(`  ${await ensureHelm()}`),
  },
  {
    name: 'Argo CD health script runner (gopher-lua)',
    run: async () => console.log(`  ${await ensureHealthRunner()}`),
  },
];

for (const step of steps) {
  console.log(`prepare: ${step.name}`);
  await step.run();
}
