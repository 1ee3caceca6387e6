import { z } from 'zod';
import type { GpuCloudClient } from '../api/client.ts';
import { isStatus, KubeApiError, type KubeClient } from '../kube/client.ts';
import { collectionPath, namespaces, objectPath, type ResourceType } from '../kube/resource-type.ts';
import { readSecret } from '../kube/secrets.ts';
import {
  API_VERSION,
  gpuPodKind,
  gpuVmKind,
  providerConfigKind,
  resourceOf,
  serverlessEndpointKind,
} from '../resources/kinds.ts';
import { describeOffer, type Offer } from '../resources/pricing/offers.ts';
import { offerSourceOf, type Price, PriceBook } from '../resources/pricing/price-book.ts';
import {
  type CloudObject,
  cloudObjectPrice,
  type Estimate,
  estimateSpec,
  heldGpusOf,
  type PlannedSpec,
  type SpendRate,
  spendRate,
} from '../resources/pricing/spend.ts';
import { ProviderConfigSpecSchema } from '../resources/provider-config/schema.ts';
import { monthOf, type SpendRecord, spendRecordSchema } from '../resources/provider-config/spend-record.ts';
import {
  type AccountLimits,
  type AccountView,
  type BudgetVerdict,
  budgetCovers,
  judgeAccount,
  type Outcome,
  UNLIMITED,
  type Verdict,
} from '../resources/provider-config/verdicts.ts';
import { CommandError, EXIT, usageError } from './errors.ts';
import type { ManifestObject } from './manifests.ts';
import type { Printable } from './output.ts';
import { type AdmissionVerdict, judgeAdmission } from './plan-admission.ts';
import { type Connections, cloudClient, explicitCredentials, kubeClient } from './target.ts';

/*
 * `gpucloud plan -f ...`: what manifests would cost per hour if applied now, at today's offers, and what
 * each account's guardrails and budgets would make of them — before anything is applied. Prices come from
 * the pricing module (resources/pricing), verdicts from the account's checks (provider-config/verdicts.ts);
 * this file reads what they need: the manifests, the ProviderConfigs and namespaces from the cluster when
 * there is one, each account's cloud objects with its key.
 */

const manifestSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z
    .looseObject({
      name: z.string().optional(),
      generateName: z.string().optional(),
      namespace: z.string().optional(),
    })
    .optional(),
  spec: z.unknown().optional(),
});

const PRICED_KINDS = [gpuPodKind, gpuVmKind, serverlessEndpointKind] as const;

/** A manifest of a GPU-holding kind, its spec parsed as admission would. */
interface PlannedResource {
  readonly source: string;
  readonly namespace: string;
  readonly name: string;
  readonly account: string;
  readonly planned: PlannedSpec;
}

/** A manifest the plan leaves out, and why. */
interface Skipped {
  readonly source: string;
  readonly kind: string;
  readonly why: string;
}

/** The GPU-holding resources of the manifests, and those left out; an invalid spec is a usage error. */
function plannedResources(
  manifests: readonly ManifestObject[],
  defaultNamespace: string,
): { resources: PlannedResource[]; skipped: Skipped[] } {
  const resources: PlannedResource[] = [];
  const skipped: Skipped[] = [];
  for (const { source, object } of manifests) {
    const parsed = manifestSchema.safeParse(object);
    if (!parsed.success) {
      skipped.push({ source, kind: '?', why: 'not a Kubernetes object' });
      continue;
    }
    const { apiVersion = '', kind = '?', metadata = {}, spec } = parsed.data;
    const definition = PRICED_KINDS.find((candidate) => candidate.kind === kind);
    if (apiVersion !== API_VERSION || definition === undefined) {
      const why = apiVersion.startsWith('gpucloud.io/')
        ? `a ${kind} has no price of its own`
        : 'not a GPU cloud resource';
      skipped.push({ source, kind, why });
      continue;
    }
    const name = metadata.name ?? `${metadata.generateName ?? kind.toLowerCase()}*`;
    const planned = plannedSpec(definition.kind, spec);
    if (!planned.success) {
      const issues = planned.error.issues
        .slice(0, 3)
        .map((issue) => `spec.${issue.path.join('.')}: ${issue.message}`)
        .join('; ');
      throw usageError(`${source}: ${kind} ${name} is not valid: ${issues}`);
    }
    resources.push({
      source,
      namespace: metadata.namespace ?? defaultNamespace,
      name,
      account: accountOf(planned.data.spec),
      planned: planned.data,
    });
  }
  return { resources, skipped };
}

type Parsed = { success: true; data: PlannedSpec } | { success: false; error: z.ZodError };

function plannedSpec(kind: (typeof PRICED_KINDS)[number]['kind'], raw: unknown): Parsed {
  const wrap = <T>(result: z.ZodSafeParseResult<T>, make: (spec: T) => PlannedSpec): Parsed =>
    result.success ? { success: true, data: make(result.data) } : { success: false, error: result.error };
  switch (kind) {
    case 'GpuPod':
      return wrap(gpuPodKind.spec.safeParse(raw), (spec) => ({ kind, spec }));
    case 'GpuVm':
      return wrap(gpuVmKind.spec.safeParse(raw), (spec) => ({ kind, spec }));
    case 'ServerlessEndpoint':
      return wrap(serverlessEndpointKind.spec.safeParse(raw), (spec) => ({ kind, spec }));
  }
}

/** The account a spec names: `providerConfigRef.name`, else `default`, as the operator reads it. */
function accountOf(spec: { providerConfigRef?: { name: string } | undefined }): string {
  return spec.providerConfigRef?.name ?? 'default';
}

/** What reading the cluster gave: the object, its absence, or why it could not be read. */
type Read<T> = { readonly found: T } | { readonly absent: true } | { readonly problem: string };

/** The cluster, read for the plan: each failure said once, and an unreachable cluster not tried again. */
class ClusterReader {
  readonly #kube: KubeClient | undefined;
  #problem: string | undefined;

  private constructor(kube: KubeClient | undefined, problem: string | undefined) {
    this.#kube = kube;
    this.#problem = problem;
  }

  static async open(connections: Connections): Promise<ClusterReader> {
    try {
      return new ClusterReader(await kubeClient(connections), undefined);
    } catch (error) {
      return new ClusterReader(
        undefined,
        `no cluster to read it from (${(error as Error).message.split('\n')[0]})`,
      );
    }
  }

  /** Why the cluster cannot be read at all, once that is known. */
  get problem(): string | undefined {
    return this.#problem;
  }

  get kube(): KubeClient | undefined {
    return this.#problem === undefined ? this.#kube : undefined;
  }

  async read<T>(schema: z.ZodType<T>, path: string, what: string): Promise<Read<T>> {
    const kube = this.kube;
    if (kube === undefined) return { problem: this.#problem ?? 'no cluster' };
    try {
      return { found: await kube.request(schema, { method: 'GET', path }) };
    } catch (error) {
      if (isStatus(error, 404)) return { absent: true };
      if (error instanceof KubeApiError) {
        return { problem: `you may not read ${what} (HTTP ${error.status} ${error.reason})` };
      }
      this.#problem = `the cluster is unreachable (${(error as Error).message.split('\n')[0]})`;
      return { problem: this.#problem };
    }
  }
}

const namespaceSchema = z.looseObject({
  metadata: z.looseObject({ labels: z.record(z.string(), z.string()).optional() }),
});
const providerConfigSchema = z.looseObject({
  spec: z.unknown(),
  status: z.looseObject({ spend: spendRecordSchema.optional().catch(undefined) }).optional(),
});
const resourceSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
  spec: z.looseObject({ providerConfigRef: z.object({ name: z.string() }).optional() }).optional(),
  status: z.looseObject({ id: z.string().optional() }).optional(),
});
const resourceListSchema = z.object({ items: z.array(resourceSchema) });

/** One account as the plan sees it: its limits (when readable), its client, its cloud objects now. */
interface Account {
  readonly name: string;
  readonly limits?: AccountLimits | undefined;
  /** Why the limits are unknown, or why the account would refuse everything (`refusal`). */
  readonly problem?: string | undefined;
  readonly refusal?: string | undefined;
  /** Where the limits came from, in words. */
  readonly from: string;
  readonly client: GpuCloudClient;
  readonly book: PriceBook;
  readonly objects: readonly CloudObject[];
  readonly spend: SpendRate;
  readonly liveGpus: number;
  /** What the operator last recorded of the account's spend (its ProviderConfig status). */
  readonly record?: SpendRecord | undefined;
}

async function openAccount(name: string, cluster: ClusterReader, connections: Connections): Promise<Account> {
  const path = objectPath(resourceOf(providerConfigKind), { namespace: '', name });
  const config = await cluster.read(providerConfigSchema, path, `ProviderConfig ${name}`);
  let limits: AccountLimits | undefined;
  let problem: string | undefined;
  let refusal: string | undefined;
  let credentials: { apiUrl: string; apiKey: string } | undefined;
  let from: string;
  let record: SpendRecord | undefined;
  if ('found' in config) {
    record = config.found.status?.spend;
    const spec = ProviderConfigSpecSchema.safeParse(config.found.spec);
    from = `ProviderConfig ${name}`;
    if (spec.success) {
      limits = spec.data;
      const { namespace, name: secret, key } = spec.data.credentials.secretRef;
      const kube = cluster.kube;
      const apiKey =
        kube && (await readSecret(kube, namespace, secret).catch(() => undefined))?.[key]?.trim();
      if (apiKey) credentials = { apiUrl: spec.data.apiUrl, apiKey };
    } else {
      problem = `ProviderConfig ${name} does not parse: ${spec.error.issues[0]?.message ?? 'invalid'}`;
    }
  } else if ('absent' in config) {
    if (name === 'default') {
      limits = UNLIMITED;
      from = "the operator's own account (no ProviderConfig named default): no guardrails";
    } else {
      from = `ProviderConfig ${name}`;
      problem = `ProviderConfig ${name} does not exist`;
      refusal = `ProviderConfig ${name} does not exist: the operator would not create it (ProviderConfigNotFound)`;
    }
  } else {
    from = `ProviderConfig ${name}`;
    problem = config.problem;
  }
  credentials ??= explicitCredentials(connections, `plan (account ${name})`);
  const client = cloudClient(credentials);
  const book = new PriceBook(offerSourceOf(client));
  const [pods, vms, endpoints] = await Promise.all([
    client.pods.list(),
    Array.fromAsync(client.vms.listAll()),
    client.serverless.list(),
  ]);
  const objects: CloudObject[] = [
    ...pods.map((object) => ({ kind: 'GpuPod' as const, object })),
    ...vms.map((object) => ({ kind: 'GpuVm' as const, object })),
    ...endpoints.map((object) => ({ kind: 'ServerlessEndpoint' as const, object })),
  ];
  const liveGpus = objects.reduce((sum, object) => sum + heldGpusOf(object), 0);
  return {
    name,
    limits,
    problem,
    refusal,
    from,
    record,
    client,
    book,
    objects,
    spend: await spendRate(book, objects),
    liveGpus,
  };
}

const KIND_RESOURCES: Readonly<Record<PlannedSpec['kind'], ResourceType>> = {
  GpuPod: resourceOf(gpuPodKind),
  GpuVm: resourceOf(gpuVmKind),
  ServerlessEndpoint: resourceOf(serverlessEndpointKind),
};

/** Every resource of the priced kinds in the cluster, by kind: who holds which cloud id. */
type Claims = Read<
  ReadonlyArray<{ kind: PlannedSpec['kind']; namespace: string; account: string; id: string }>
>;

async function clusterClaims(cluster: ClusterReader): Promise<Claims> {
  const claims = [];
  for (const [kind, resource] of Object.entries(KIND_RESOURCES) as Array<
    [PlannedSpec['kind'], ResourceType]
  >) {
    const list = await cluster.read(
      resourceListSchema,
      collectionPath(resource),
      `${kind}s in every namespace`,
    );
    if (!('found' in list)) return 'absent' in list ? { problem: `no ${kind} kind in the cluster` } : list;
    for (const item of list.found.items) {
      const id = item.status?.id;
      if (id === undefined) continue;
      claims.push({
        kind,
        namespace: item.metadata.namespace ?? '',
        account: accountOf(item.spec ?? {}),
        id,
      });
    }
  }
  return { found: claims };
}

/** Each budget's spend now: the account's, or that of the objects the resources of its namespaces hold. */
async function budgetSpend(
  account: Account,
  claims: () => Promise<Claims>,
  labelsOf: (namespace: string) => Readonly<Record<string, string>> | undefined,
): Promise<Map<string, SpendRate | { unknown: string }>> {
  const spend = new Map<string, SpendRate | { unknown: string }>();
  for (const budget of account.limits?.guardrails?.budgets ?? []) {
    if (budget.namespaces === undefined) {
      spend.set(budget.name, account.spend);
      continue;
    }
    const held = await claims();
    if (!('found' in held)) {
      spend.set(budget.name, {
        unknown: `its namespaces' spend is unknown: ${'problem' in held ? held.problem : ''}`,
      });
      continue;
    }
    const ids = new Set<string>();
    let unsure = false;
    for (const claim of held.found) {
      if (claim.account !== account.name) continue;
      const covered = budgetCovers(budget, claim.namespace, labelsOf(claim.namespace));
      if (covered === undefined) unsure = true;
      if (covered) ids.add(`${claim.kind}/${claim.id}`);
    }
    if (unsure) {
      spend.set(budget.name, { unknown: 'the labels of some namespaces with resources could not be read' });
      continue;
    }
    const objects = account.objects.filter((object) => ids.has(`${object.kind}/${object.object.id}`));
    spend.set(budget.name, await spendRate(account.book, objects));
  }
  return spend;
}

/** What the object a planned resource already holds costs and holds now; undefined for a new resource. */
async function existing(
  resource: PlannedResource,
  account: Account,
  cluster: ClusterReader,
): Promise<{ perHour: number; gpus: number } | undefined> {
  const path = objectPath(KIND_RESOURCES[resource.planned.kind], resource);
  const found = await cluster.read(
    resourceSchema,
    path,
    `${resource.planned.kind} ${resource.namespace}/${resource.name}`,
  );
  if (!('found' in found)) return undefined;
  const id = found.found.status?.id;
  if (id === undefined || accountOf(found.found.spec ?? {}) !== account.name) return undefined;
  const object = account.objects.find((each) => each.kind === resource.planned.kind && each.object.id === id);
  if (object === undefined) return undefined;
  const gpus = heldGpusOf(object);
  if (gpus === 0) return { perHour: 0, gpus: 0 };
  const price = await cloudObjectPrice(account.book, object);
  return { perHour: price.priced ? price.perHour : 0, gpus };
}

/** One resource of the plan, as `-o json` prints it. */
export interface PlannedRow {
  readonly source: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly account: string;
  readonly price: Price;
  readonly gpus?: Estimate['gpus'];
  readonly live: boolean;
  /** A GpuPod that leaves the choice to the operator: the offer placement would pick now. */
  readonly placement?: Offer | undefined;
  readonly existing?: { readonly perHour: number; readonly gpus: number } | undefined;
  readonly outcome: Outcome;
  readonly verdicts: readonly Verdict[];
}

/** The whole plan, as `-o json` prints it. */
export interface PlanResult {
  readonly resources: readonly PlannedRow[];
  readonly total: { perHour: number; lowestPerHour: number; maxPerHour: number; unpriced: number };
  readonly accounts: ReadonlyArray<{
    name: string;
    limitsFrom: string;
    guardrails: 'read' | 'unknown';
    problem?: string | undefined;
    liveGpus: number;
    spend: { perHour: number; lowestPerHour: number; counted: number; unpriced: number; exact: boolean };
    budgets: readonly BudgetVerdict[];
  }>;
  readonly skipped: readonly Skipped[];
  /** What admission made of each manifest of our kinds (all admitted: a refusal ends the plan). */
  readonly admission: readonly AdmissionVerdict[];
  readonly outcome: Outcome;
}

/**
 * Prices every GpuPod, GpuVm and ServerlessEndpoint of `manifests` at today's offers, and judges them against
 * the guardrails and budgets of the accounts they name, as if applied together now. `refused` counts the
 * resources that would not be created now (no offer, or a limit of their account). A manifest admission
 * would refuse (plan-admission.ts) ends the plan first, with exit code 2.
 */
export async function plan(
  manifests: readonly ManifestObject[],
  connections: Connections,
): Promise<{ result: PlanResult; printable: Printable; refused: number }> {
  const cluster = await ClusterReader.open(connections);
  const defaultNamespace = connections.namespace ?? 'default';
  const { kube } = cluster;
  const admission = await judgeAdmission(
    manifests,
    kube ? { kube } : { problem: cluster.problem ?? 'no cluster' },
    defaultNamespace,
  );
  refuseInadmissible(admission);
  const { resources, skipped } = plannedResources(manifests, defaultNamespace);
  const accounts = new Map<string, Account>();
  try {
    for (const name of new Set(resources.map((resource) => resource.account))) {
      accounts.set(name, await openAccount(name, cluster, connections));
    }
    const labels = new Map<string, Readonly<Record<string, string>> | undefined>();
    const labelsOf = (namespace: string) => labels.get(namespace);
    const readLabels = async (namespace: string) => {
      if (labels.has(namespace)) return;
      const read = await cluster.read(
        namespaceSchema,
        objectPath(namespaces, { namespace: '', name: namespace }),
        `namespace ${namespace}`,
      );
      labels.set(namespace, 'found' in read ? (read.found.metadata.labels ?? {}) : undefined);
    };
    for (const resource of resources) await readLabels(resource.namespace);
    let claims: Promise<Claims> | undefined;
    const claimsOnce = async () => {
      claims ??= clusterClaims(cluster);
      const held = await claims;
      if ('found' in held) for (const claim of held.found) await readLabels(claim.namespace);
      return held;
    };

    const rows: PlannedRow[] = [];
    const budgets: PlanResult['accounts'][number][] = [];
    for (const account of accounts.values()) {
      const mine = resources.filter((resource) => resource.account === account.name);
      const estimates = await Promise.all(
        mine.map((resource) => estimateSpec(account.book, resource.planned)),
      );
      const holding = await Promise.all(mine.map((resource) => existing(resource, account, cluster)));
      const view: AccountView = {
        spec: account.limits,
        problem: account.problem,
        liveGpus: account.liveGpus,
        budgetSpend: await budgetSpend(account, claimsOnce, labelsOf),
        monthToDate: (budget) =>
          account.record?.month === monthOf(Date.now())
            ? (account.record.budgets?.find((entry) => entry.name === budget)?.monthToDate ?? 0)
            : 0,
        now: Date.now(),
        labelsOf,
      };
      const judged = judgeAccount(
        mine.map((resource, index) => ({
          namespace: resource.namespace,
          estimate: estimates[index] as Estimate,
          existing: holding[index],
        })),
        view,
      );
      mine.forEach((resource, index) => {
        const estimate = estimates[index] as Estimate;
        const verdicts = [
          ...(account.refusal
            ? [{ check: 'providerConfig', outcome: 'refused' as const, message: account.refusal }]
            : []),
          ...(judged.items[index] ?? []),
        ];
        rows.push({
          source: resource.source,
          kind: resource.planned.kind,
          namespace: resource.namespace,
          name: resource.name,
          account: account.name,
          price: estimate.price,
          gpus: estimate.gpus,
          live: estimate.live,
          placement: estimate.placement,
          existing: holding[index],
          outcome: worst(verdicts.map((verdict) => verdict.outcome)),
          verdicts,
        });
      });
      budgets.push({
        name: account.name,
        limitsFrom: account.from,
        guardrails: account.limits ? 'read' : 'unknown',
        problem: account.problem,
        liveGpus: account.liveGpus,
        spend: {
          perHour: account.spend.perHour,
          lowestPerHour: account.spend.lowestPerHour,
          counted: account.spend.counted,
          unpriced: account.spend.unpriced.length,
          exact: account.spend.exact,
        },
        budgets: judged.budgets,
      });
    }
    // The manifests' order, whatever the accounts' order.
    const order = new Map(resources.map((resource, index) => [resource.source, index]));
    rows.sort((a, b) => (order.get(a.source) ?? 0) - (order.get(b.source) ?? 0));
    const result: PlanResult = {
      resources: rows,
      total: totalOf(rows),
      accounts: budgets,
      skipped,
      admission,
      outcome: worst(rows.map((row) => row.outcome)),
    };
    return {
      result,
      printable: printable(result),
      refused: rows.filter((row) => row.outcome === 'refused').length,
    };
  } finally {
    await Promise.all([...accounts.values()].map((account) => account.client.close()));
  }
}

/** Every manifest admission would refuse, each with who judged it: a spec that is not valid (exit 2). */
function refuseInadmissible(admission: readonly AdmissionVerdict[]): void {
  const refused = admission.filter((verdict) => verdict.refused !== undefined);
  if (refused.length === 0) return;
  const lines = refused.map(
    (verdict) => `  ${verdict.source}: ${verdict.resource}: ${verdict.refused} (${judgedBy(verdict)})`,
  );
  throw new CommandError(
    `plan: ${refused.length} of ${admission.length} resources would be refused by admission:\n${lines.join('\n')}`,
    EXIT.usage,
  );
}

function judgedBy(verdict: AdmissionVerdict): string {
  return verdict.by === 'cluster'
    ? 'judged by the cluster, a dry run'
    : `judged offline by the CRDs' schema and rules: ${verdict.offline}`;
}

function worst(outcomes: readonly Outcome[]): Outcome {
  if (outcomes.includes('refused')) return 'refused';
  return outcomes.includes('unknown') ? 'unknown' : 'allowed';
}

function totalOf(rows: readonly PlannedRow[]): PlanResult['total'] {
  let perHour = 0;
  let lowestPerHour = 0;
  let maxPerHour = 0;
  let unpriced = 0;
  for (const { price } of rows) {
    if (!price.priced) {
      unpriced++;
      continue;
    }
    perHour += price.perHour;
    lowestPerHour += price.lowestPerHour;
    maxPerHour += price.maxPerHour ?? price.perHour;
  }
  return { perHour, lowestPerHour, maxPerHour, unpriced };
}

const money = (n: number) => n.toFixed(4);

function priceText(price: Price): string {
  if (!price.priced) return price.reason === 'NotQuoted' ? 'not quoted' : 'no offer';
  const base =
    price.exactness === 'range'
      ? `${money(price.lowestPerHour)}-${money(price.perHour)}`
      : money(price.perHour);
  return price.maxPerHour === undefined ? base : `${base} (up to ${money(price.maxPerHour)})`;
}

const SOURCES: Readonly<Record<string, string>> = {
  object: 'the object',
  offers: 'offers',
  vmTypes: 'VM types',
};

function printable(result: PlanResult): Printable {
  const { total } = result;
  const notes: string[] = [];
  for (const row of result.resources) {
    const resource = `${row.kind.toLowerCase()}/${row.name}`;
    if (row.placement) notes.push(`${resource}: placement would pick ${describeOffer(row.placement)}`);
    if (row.price.priced && row.price.available === false) {
      notes.push(`${resource}: no offer it could get has room now; the create would wait for capacity`);
    }
    if (!row.live)
      notes.push(`${resource}: paused or stopped, it costs nothing per hour once the cloud has made it so`);
    for (const verdict of row.verdicts) {
      // An account whose limits are unknown is said once, below.
      if (verdict.outcome === 'allowed' || verdict.check === 'guardrails') continue;
      notes.push(`${resource}: ${verdict.check} ${verdict.outcome}: ${verdict.message}`);
    }
  }
  for (const account of result.accounts) {
    if (account.guardrails === 'unknown') {
      notes.push(`account ${account.name}: guardrails and budgets unknown: ${account.problem ?? 'not read'}`);
    }
    for (const budget of account.budgets) {
      if (budget.outcome !== 'allowed')
        notes.push(`account ${account.name}, budget ${budget.budget}: ${budget.message}`);
    }
    if (account.spend.unpriced > 0) {
      notes.push(
        `account ${account.name}: ${account.spend.unpriced} running objects have no price; its spend is a lower bound`,
      );
    }
  }
  for (const skip of result.skipped) notes.push(`${skip.source}: ${skip.kind} left out: ${skip.why}`);
  const offline = Map.groupBy(
    result.admission.filter((verdict) => verdict.by === 'crds'),
    (verdict) => verdict.offline ?? '',
  );
  for (const [why, verdicts] of offline) {
    notes.push(
      `admission of ${verdicts.length} resources judged offline by the CRDs' schema and rules: ${why}`,
    );
  }
  const totalText =
    total.lowestPerHour === total.perHour
      ? money(total.perHour)
      : `${money(total.lowestPerHour)}-${money(total.perHour)}`;
  return {
    value: result,
    columns: ['namespace', 'resource', 'account', 'usd/h', 'exactness', 'from', 'verdict'],
    rows: [
      ...result.resources.map((row) => [
        row.namespace,
        `${row.kind.toLowerCase()}/${row.name}`,
        row.account,
        priceText(row.price),
        row.price.priced ? row.price.exactness : row.price.reason,
        row.price.priced ? SOURCES[row.price.source] : '',
        verdictText(row),
      ]),
      [
        '',
        `total (${result.resources.length})`,
        '',
        total.maxPerHour > total.perHour ? `${totalText} (up to ${money(total.maxPerHour)})` : totalText,
        total.unpriced > 0 ? `${total.unpriced} unpriced` : '',
        '',
        result.outcome,
      ],
    ],
    more: [
      {
        value: result.accounts,
        columns: [
          'account',
          'limits from',
          'live gpus',
          'usd/h now',
          'budget',
          'covers',
          'limit usd/h',
          'plan adds',
          'verdict',
        ],
        rows: result.accounts.flatMap((account) => {
          const head = [account.name, account.limitsFrom, account.liveGpus, money(account.spend.perHour)];
          if (account.budgets.length === 0) {
            const unknown = account.guardrails === 'unknown';
            return [[...head, unknown ? '(unknown)' : '(none)', '', '', '', unknown ? 'unknown' : '']];
          }
          return account.budgets.map((budget, index) => [
            ...(index === 0 ? head : ['', '', '', '']),
            budget.budget,
            budget.covers,
            money(budget.limit.perHour),
            money(budget.addingPerHour),
            budget.outcome,
          ]);
        }),
      },
      ...(notes.length > 0 ? [{ value: notes, columns: ['note'], rows: notes.map((note) => [note]) }] : []),
    ],
  };
}

function verdictText(row: PlannedRow): string {
  const first = row.verdicts.find(
    (verdict) => verdict.outcome === row.outcome && verdict.outcome !== 'allowed',
  );
  return first === undefined ? row.outcome : `${row.outcome} (${first.check})`;
}
