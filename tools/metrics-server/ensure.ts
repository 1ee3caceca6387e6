// Builds metrics-server from its Go module into the tool cache (once per version) and says where it is: the
// tests run it against the virtual nodes, as a cluster runs it for `kubectl top`. Run directly
// (`node tools/metrics-server/ensure.ts`) or as a step of `npm test`'s preparation.
import { cachedTool, go, isExecutable, ToolUnavailableError } from '../helm/tool-cache.ts';

export const METRICS_SERVER_VERSION = 'v0.8.0';
const PACKAGE = 'sigs.k8s.io/metrics-server/cmd/metrics-server';

/** Set to a metrics-server binary to use it instead of building one. */
export const METRICS_SERVER_BIN_ENV = 'GPUCLOUD_METRICS_SERVER_BIN';

export async function ensureMetricsServer(): Promise<string> {
  const override = process.env[METRICS_SERVER_BIN_ENV];
  if (override) {
    if (await isExecutable(override)) return override;
    throw new ToolUnavailableError(`${METRICS_SERVER_BIN_ENV}=${override} is not an executable file`);
  }
  return cachedTool(`metrics-server-${METRICS_SERVER_VERSION}`, 'metrics-server', async (outDir) => {
    console.log(
      `building metrics-server from ${PACKAGE}@${METRICS_SERVER_VERSION} (first run only, takes a few minutes)`,
    );
    await go(['install', '-trimpath', '-ldflags=-s -w', `${PACKAGE}@${METRICS_SERVER_VERSION}`], {
      env: { GOBIN: outDir },
    });
  });
}

if (import.meta.main) console.log(await ensureMetricsServer());
