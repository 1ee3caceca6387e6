// Installs what the tests need that npm does not bring (the local control plane binaries, and later
// helm and lua), so that `npm test` works on a fresh machine. Each step is cached and idempotent.
import { ensureControlPlaneBinary } from './controlplane/build.ts';

const steps: Array<{ name: string; run: () => Promise<void> }> = [
  {
    name: 'control plane binary (etcd + kube-apiserver)',
    run: async () => {
      const binary = await ensureControlPlaneBinary((line) => console.log(`  ${line}`));
      console.log(`  ${binary}`);
    },
  },
];

for (const step of steps) {
  console.log(`prepare: ${step.name}`);
  await step.run();
}
