// Reads Prometheus text exposition: the apiserver's request counters (what the operator wrote) and the
// operator's own metrics (reconciles, rate-limiter waits).
import { type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { fetch } from 'undici';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key as string] = value as string;
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

/** Sums the samples named `name` by the label values `keyOf` gives (undefined drops a sample). */
export function sumBy(
  samples: readonly Sample[],
  name: string,
  keyOf: (labels: Record<string, string>) => string | undefined,
): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const sample of samples) {
    if (sample.name !== name) continue;
    const key = keyOf(sample.labels);
    if (key !== undefined) sums[key] = (sums[key] ?? 0) + sample.value;
  }
  return sums;
}

const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'DELETECOLLECTION']);
/**
 * The resources the operator writes; the apiserver's own writes (its lease, ...) are left out, and so are
 * the leases of leader election and of a virtual node, written by the clock rather than per resource.
 */
const OPERATOR_RESOURCES = new Set([
  'gpupods',
  'gpuvms',
  'serverlessendpoints',
  'serverlesstasks',
  'events',
  // A virtual node's: its Pods (the benchmark's create among them) and the Node itself.
  'pods',
  'nodes',
]);

/**
 * Writes the apiserver has served so far, by `VERB resource[/subresource]`, for the operator's resources;
 * those it refused as conflicts (a write from a stale copy) apart, as `VERB resource (409)`: they cost a
 * round trip all the same.
 */
export async function apiserverWrites(kubeConfig: KubeConfig): Promise<Record<string, number>> {
  const samples = parseMetrics(await apiserverMetricsText(kubeConfig));
  return sumBy(samples, 'apiserver_request_total', (labels) => {
    if (!WRITE_VERBS.has(labels.verb ?? '') || !OPERATOR_RESOURCES.has(labels.resource ?? ''))
      return undefined;
    const conflict = labels.code === '409' ? ' (409)' : '';
    return `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}${conflict}`;
  });
}

async function apiserverMetricsText(kubeConfig: KubeConfig): Promise<string> {
  const server = kubeConfig.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig names no server');
  const url = `${server.replace(/\/+$/, '')}/metrics`;
  const context = new RequestContext(url, 'GET');
  await kubeConfig.applySecurityAuthentication(context);
  const response = await fetch(url, { headers: context.getHeaders(), dispatcher: context.getDispatcher() });
  if (!response.ok) throw new Error(`GET ${url}: HTTP ${response.status}`);
  return response.text();
}

/** The operator's metrics from its health server. */
export async function operatorMetrics(port: number): Promise<Sample[]> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (!response.ok) throw new Error(`operator /metrics: HTTP ${response.status}`);
  return parseMetrics(await response.text());
}
