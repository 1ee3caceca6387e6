// Usage: node tools/controlplane/ensure.ts
// Prints the path of the control plane binary on stdout, building it first if the cache lacks it.
// Progress goes to stderr.
import { ensureControlPlaneBinary } from './build.ts';

try {
  console.log(await ensureControlPlaneBinary((line) => console.error(line)));
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
}
