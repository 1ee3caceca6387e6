// Builds helm from its Go module into the tool cache (once per version) and says where it is.
// Run directly (`node tools/helm/ensure.ts`) or as a step of `npm test`'s preparation.
import { readFile } from 'node:fs/promises';
import { cachedTool, go, isExecutable, ToolUnavailableError } from './tool-cache.ts';

export const HELM_VERSION = 'v3.22.0';
const MODULE = 'helm.sh/helm/v3';

/** Set to a helm binary to use it instead of building one. */
export const HELM_BIN_ENV = 'GPUCLOUD_HELM_BIN';

export async function ensureHelm(): Promise<string> {
  const override = process.env[HELM_BIN_ENV];
  if (override) {
    if (await isExecutable(override)) return override;
    throw new ToolUnavailableError(`${HELM_BIN_ENV}=${override} is not an executable file`);
  }
  return cachedTool(`helm-${HELM_VERSION}`, 'helm', async (outDir) => {
    console.log(`building helm ${HELM_VERSION} from ${MODULE} (first run only, takes a few minutes)`);
    const ldflags = ['-s', '-w', ...(await versionFlags())].join(' ');
    await go(['install', '-trimpath', `-ldflags=${ldflags}`, `${MODULE}/cmd/helm@${HELM_VERSION}`], {
      env: { GOBIN: outDir },
    });
  });
}

/**
 * What helm's own release build stamps in: its version, and the Kubernetes version `helm template` and
 * `helm lint` assume, derived from the client-go it is built with (as helm's Makefile does).
 */
async function versionFlags(): Promise<string[]> {
  const download = JSON.parse(await go(['mod', 'download', '-json', `${MODULE}@${HELM_VERSION}`])) as {
    GoMod: string;
  };
  const goMod = await readFile(download.GoMod, 'utf8');
  const clientGo = /^\s*k8s\.io\/client-go v0\.(\d+)\.\d+/m.exec(goMod);
  if (!clientGo?.[1]) throw new ToolUnavailableError(`no k8s.io/client-go requirement in ${download.GoMod}`);
  const flags: Record<string, string> = {
    'helm.sh/helm/v3/internal/version.version': HELM_VERSION,
    'helm.sh/helm/v3/internal/version.gitTreeState': 'clean',
  };
  for (const pkg of ['helm.sh/helm/v3/pkg/lint/rules', 'helm.sh/helm/v3/pkg/chartutil']) {
    flags[`${pkg}.k8sVersionMajor`] = '1';
    flags[`${pkg}.k8sVersionMinor`] = clientGo[1];
  }
  return Object.entries(flags).map(([name, value]) => `-X ${name}=${value}`);
}

if (import.meta.main) console.log(await ensureHelm());
