// Builds the Argo CD health script runner (main.go here) into the tool cache, once per source and Go version.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cachedTool, go } from '../helm/tool-cache.ts';

const SOURCE_DIR = import.meta.dirname;
const SOURCES = /\.go$|^go\.(mod|sum)$/;

export async function ensureHealthRunner(): Promise<string> {
  const key = await sourceKey();
  return cachedTool(`argocd-health-${key}`, 'argocd-health', async (outDir) => {
    console.log('building the Argo CD health script runner (gopher-lua) from tools/argocd-health');
    await go(['build', '-trimpath', '-o', join(outDir, 'argocd-health'), '.'], { cwd: SOURCE_DIR });
  });
}

async function sourceKey(): Promise<string> {
  const hash = createHash('sha256');
  hash.update(await go(['env', 'GOVERSION']));
  const files = (await readdir(SOURCE_DIR)).filter((file) => SOURCES.test(file)).sort();
  for (const file of files) {
    hash.update(`${file}\n`);
    hash.update(await readFile(join(SOURCE_DIR, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

if (import.meta.main) console.log(await ensureHealthRunner());
