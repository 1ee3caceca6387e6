import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { argoCdFiles } from './argocd-health/artifacts.ts';
import { CRD_DIR, generateCrdFiles } from './crd/files.ts';
import { crdReference, metricsReference } from './docs/reference.ts';
import { DASHBOARD_FILE, dashboardJson } from './grafana/dashboard.ts';
import {
  chartFiles,
  renderedManifestFiles,
  tenantApiManifestFiles,
  writeRepoFiles,
} from './helm/artifacts.ts';
import { plainRulesFile, prometheusRuleTemplate, RULES_FILE } from './prometheus/rules.ts';

// Writes the generated artefacts: one CRD file per kind under crds/, then the deployment artefacts derived
// from them (chart, plain manifests, Argo CD health checks). Run with `npm run gen`.

async function main(): Promise<void> {
  await mkdir(CRD_DIR, { recursive: true });
  for (const [name, content] of generateCrdFiles()) {
    await writeFile(join(CRD_DIR, name), content);
    console.log(`wrote crds/${name}`);
  }
  await writeDeployFiles();
  await writeRepoFiles(await referenceFiles());
}

/** The dashboard and the alert rules, each in its plain form and in the chart. */
export function monitoringFiles(): Map<string, string> {
  const yaml = (value: unknown) => dump(value, { lineWidth: -1, noRefs: true });
  const chart = join('deploy', 'helm', 'gpucloud-operator');
  return new Map([
    [DASHBOARD_FILE, dashboardJson()],
    [join(chart, 'dashboards', 'gpucloud-operator.json'), dashboardJson()],
    [RULES_FILE, plainRulesFile(yaml)],
    [join(chart, 'templates', 'prometheusrule.yaml'), prometheusRuleTemplate(yaml)],
  ]);
}

/** The reference pages under docs/, generated from the CRDs and the metric registries. */
export async function referenceFiles(): Promise<Map<string, string>> {
  return new Map([
    ['docs/crd-reference.md', crdReference()],
    ['docs/metrics.md', await metricsReference()],
  ]);
}

/**
 * The chart, the Argo CD health checks, then the plain manifests and their tenant API file, which helm
 * renders from the chart.
 */
async function writeDeployFiles(): Promise<void> {
  const crds = generateCrdFiles();
  await writeRepoFiles(await chartFiles(crds));
  await writeRepoFiles(monitoringFiles());
  await writeRepoFiles(await argoCdFiles());
  await writeRepoFiles(await renderedManifestFiles(crds));
  await writeRepoFiles(await tenantApiManifestFiles());
}

if (import.meta.main) await main();
