// Installs what the tests need that npm does not bring (the local control plane binaries, and later
// helm and lua), so that `npm test` works on a fresh machine. Each step is cached and idempotent.
const steps: Array<{ name: string; run: () => Promise<void> }> = [];

for (const step of steps) {
  console.log(`prepare: ${step.name}`);
  await step.run();
}
