// Builds promtool from the Prometheus Go module into the tool cache (once per version) and says where it is.
// Run directly (`node tools/prometheus/ensure.ts`) or as a step of `npm test`'s preparation.
import { cachedTool, go, isExecutable, ToolUnavailableError } from '../helm/tool-cache.ts';

/** The Prometheus module's Go version tag (v0.316.0 is Prometheus 3.16). */
export const PROMETHEUS_MODULE_VERSION = 'v0.316.0';
const PACKAGE = 'github.com/prometheus/prometheus/cmd/promtool';

/** Set to a promtool binary to use it instead of building one. */
export const PROMTOOL_BIN_ENV = 'GPUCLOUD_PROMTOOL_BIN';

export async function ensurePromtool(): Promise<string> {
  const override = process.env[PROMTOOL_BIN_ENV];
  if (override) {
    if (await isExecutable(override)) return override;
    throw new ToolUnavailableError(`${PROMTOOL_BIN_ENV}=${override} is not an executable file`);
  }
  return cachedTool(`promtool-${PROMETHEUS_MODULE_VERSION}-no-sd`, 'promtool', async (outDir) => {
    console.log(
      `building promtool from ${PACKAGE}@${PROMETHEUS_MODULE_VERSION} (first run only, takes a few minutes)`,
    );
    // Without the service-discovery plugins (the clouds' SDKs, client-go): the tests only check and
    // unit-test rules, and the build takes a fraction of the time.
    await go(
      [
        'install',
        '-trimpath',
        '-tags=remove_all_sd',
        '-ldflags=-s -w',
        `${PACKAGE}@${PROMETHEUS_MODULE_VERSION}`,
      ],
      { env: { GOBIN: outDir } },
    );
  });
}

if (import.meta.main) console.log(await ensurePromtool());
