import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { z } from 'zod';
import type { GpuCloudClient } from '../api/client.ts';
import { isStatus, type KubeClient } from '../kube/client.ts';
import { collectionPath, objectPath } from '../kube/resource-type.ts';
import {
  EXTERNAL_ID,
  type ManagedKindName,
  managedKinds,
  OWNER_ENV,
  providerConfigKind,
  resourceOf,
} from '../resources/kinds.ts';
import { CommandError, EXIT } from './errors.ts';
import { type Destination, type Imported, importEndpoint, importPod, importVm } from './import-manifests.ts';
import type { OutputFormat } from './output.ts';
import { table } from './output.ts';

/** The kinds import reads from the cloud: tasks are not imported (they finish, and cannot be adopted). */
export const IMPORTED_KINDS = ['GpuPod', 'GpuVm', 'ServerlessEndpoint'] as const satisfies ManagedKindName[];
export type ImportedKind = (typeof IMPORTED_KINDS)[number];

export interface ImportOptions {
  readonly kinds: readonly ImportedKind[];
  /** A glob on the cloud name (`*` any run of characters, `?` one). */
  readonly name?: string | undefined;
  readonly regions?: readonly string[] | undefined;
  /** Cloud phases (RUNNING, PAUSED, STOPPED, ...). */
  readonly statuses?: readonly string[] | undefined;
  readonly destination: Destination;
}

/** An object another resource holds: skipped. `by` names it as the caller can see it. */
export interface Skipped {
  readonly kind: ImportedKind;
  readonly id: string;
  readonly cloudName: string;
  readonly by: string;
}

export interface Renamed {
  readonly kind: ImportedKind;
  readonly id: string;
  readonly cloudName: string;
  readonly name: string;
  readonly why: string;
}

export interface ImportResult {
  readonly imported: Imported[];
  readonly skipped: Skipped[];
  readonly renamed: Renamed[];
  /** What the account says of adoption, and what that means for these manifests. */
  readonly adoption: string[];
  /** Claims were seen in the whole cluster, or (the caller's RBAC lists no more) in its namespace only. */
  readonly claimsSeen: 'cluster' | 'namespace';
}

const claimSchema = z.object({
  items: z.array(
    z.looseObject({
      metadata: z.looseObject({
        name: z.string(),
        namespace: z.string(),
        uid: z.string(),
        annotations: z.record(z.string(), z.string()).optional(),
      }),
      status: z.looseObject({ id: z.string().optional() }).optional(),
    }),
  ),
});

/** Who holds what in the cluster, as far as the caller may list it. */
interface Claims {
  /** `Kind/id` → the resource that names or holds it. */
  readonly byId: Map<string, string>;
  /** A resource's uid (an owner marker names it) → the resource. */
  readonly byUid: Map<string, string>;
  /** `Kind/name` of the resources in the destination namespace. */
  readonly names: Set<string>;
  readonly scope: 'cluster' | 'namespace';
}

/**
 * Reads the account's pods, VMs and endpoints and turns those no resource holds into manifests (see
 * import-manifests.ts for each kind), named for Kubernetes, collisions resolved.
 */
export async function importFleet(
  client: GpuCloudClient,
  kube: KubeClient,
  options: ImportOptions,
): Promise<ImportResult> {
  const { destination } = options;
  const claims = await claimsIn(kube, destination.namespace);
  const matches = matcher(options);
  const found: Array<{ kind: ImportedKind; id: string; cloudName: string; marker?: string | undefined }> = [];
  const builders = new Map<string, (name: string) => Promise<Imported | undefined>>();
  const add = (
    kind: ImportedKind,
    id: string,
    cloudName: string,
    marker: string | undefined,
    build: (name: string) => Promise<Imported | undefined>,
  ) => {
    found.push({ kind, id, cloudName, marker });
    builders.set(`${kind}/${id}`, build);
  };
  if (options.kinds.includes('GpuPod')) {
    const pods = (await client.pods.list()).filter(
      (pod) =>
        pod.status !== 'TERMINATED' &&
        pod.status !== 'TERMINATING' &&
        matches(pod.name, pod.region, pod.status),
    );
    for (const pod of pods) {
      // The list leaves out the environment (and so the owner marker): a get has everything.
      const full = await client.pods.get(pod.id);
      const marker = full.environmentVars.find(({ key }) => key === OWNER_ENV)?.value;
      add('GpuPod', pod.id, pod.name, marker, async (name) => importPod(full, name, destination));
    }
  }
  if (options.kinds.includes('GpuVm')) {
    const vms = (await Array.fromAsync(client.vms.listAll())).filter(
      (vm) =>
        vm.status !== 'TERMINATED' && vm.status !== 'TERMINATING' && matches(vm.name, vm.region, vm.status),
    );
    let types: Promise<Awaited<ReturnType<GpuCloudClient['vms']['types']>>> | undefined;
    for (const vm of vms) {
      add('GpuVm', String(vm.id), vm.name, undefined, async (name) => {
        types ??= client.vms.types();
        return importVm(vm, name, destination, await types);
      });
    }
  }
  if (options.kinds.includes('ServerlessEndpoint')) {
    const endpoints = (await client.serverless.list()).filter((endpoint) =>
      matches(
        endpoint.name,
        endpoint.resources.map(({ region }) => region),
        endpoint.status,
      ),
    );
    for (const endpoint of endpoints) {
      const marker = endpoint.environmentVars.find(({ key }) => key === OWNER_ENV)?.value;
      add('ServerlessEndpoint', endpoint.id, endpoint.name, marker, async (name) =>
        importEndpoint(endpoint, name, destination),
      );
    }
  }
  const imported: Imported[] = [];
  const skipped: Skipped[] = [];
  const renamed: Renamed[] = [];
  const taken = new Set(claims.names);
  // In id order, so that a second run names the same objects the same way.
  found.sort((a, b) => a.kind.localeCompare(b.kind) || a.id.localeCompare(b.id, 'en', { numeric: true }));
  for (const object of found) {
    const by =
      claims.byId.get(`${object.kind}/${object.id}`) ??
      (object.marker === undefined ? undefined : claims.byUid.get(object.marker));
    if (by) {
      skipped.push({ kind: object.kind, id: object.id, cloudName: object.cloudName, by });
      continue;
    }
    const { name, why } = nameFor(object, taken, destination.namespace);
    taken.add(`${object.kind}/${name}`);
    if (why) renamed.push({ kind: object.kind, id: object.id, cloudName: object.cloudName, name, why });
    const built = await builders.get(`${object.kind}/${object.id}`)?.(name);
    if (built) imported.push(built);
  }
  return {
    imported,
    skipped,
    renamed,
    adoption: await adoptionOf(kube, destination),
    claimsSeen: claims.scope,
  };
}

/** Whether a cloud object passes the filters: name glob, regions, phases. */
function matcher(options: ImportOptions) {
  const glob = options.name === undefined ? undefined : globToRegExp(options.name);
  return (name: string, region: string | readonly string[], phase: string): boolean => {
    const regions = typeof region === 'string' ? [region] : region;
    return (
      (glob === undefined || glob.test(name)) &&
      (!options.regions?.length || regions.some((each) => options.regions?.includes(each))) &&
      (!options.statuses?.length || options.statuses.includes(phase.toUpperCase()))
    );
  };
}

function globToRegExp(glob: string): RegExp {
  const source = [...glob]
    .map((char) => (char === '*' ? '.*' : char === '?' ? '.' : char.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, 'i');
}

/** Kubernetes names (RFC 1123 labels) stay within this, so that any kind may take them. */
const MAX_NAME = 63;

/**
 * A valid Kubernetes name for the cloud name: lower case, runs of other characters as one `-`. When a
 * resource of the kind already has it in the namespace, or another object of this import took it, the
 * cloud id is appended: unique, and the same on every run.
 */
function nameFor(
  object: { kind: ImportedKind; id: string; cloudName: string },
  taken: ReadonlySet<string>,
  namespace: string,
): { name: string; why?: string } {
  const singular = object.kind.toLowerCase();
  const base = dnsLabel(object.cloudName) || `${singular}-${dnsLabel(object.id)}`;
  if (!taken.has(`${object.kind}/${base}`)) return { name: base };
  const suffix = `-${dnsLabel(object.id)}`;
  const name = `${base.slice(0, MAX_NAME - suffix.length).replace(/-+$/, '')}${suffix}`;
  return { name, why: `${singular}/${base} is taken in namespace ${namespace}` };
}

function dnsLabel(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, MAX_NAME)
    .replace(/-+$/, '');
}

/**
 * Who holds what: every resource of the imported kinds in the cluster, or in the destination namespace
 * when the caller's RBAC lists no more (a tenant). Only what the caller may see is named.
 */
async function claimsIn(kube: KubeClient, namespace: string): Promise<Claims> {
  const byId = new Map<string, string>();
  const byUid = new Map<string, string>();
  const names = new Set<string>();
  let scope: Claims['scope'] = 'cluster';
  for (const kind of IMPORTED_KINDS) {
    const definition = managedKinds.find((candidate) => candidate.kind === kind);
    if (!definition) continue;
    const resource = resourceOf(definition);
    const list = await kube
      .request(claimSchema, { method: 'GET', path: collectionPath(resource) })
      .catch(async (error: unknown) => {
        if (!isStatus(error, 403)) throw error;
        scope = 'namespace';
        return kube.request(claimSchema, { method: 'GET', path: collectionPath(resource, namespace) });
      });
    for (const { metadata, status } of list.items) {
      const ref = `${definition.singular}/${metadata.name} -n ${metadata.namespace}`;
      for (const id of [status?.id, metadata.annotations?.[EXTERNAL_ID]]) {
        if (id) byId.set(`${kind}/${id}`, ref);
      }
      byUid.set(metadata.uid, ref);
      if (metadata.namespace === namespace) names.add(`${kind}/${metadata.name}`);
    }
  }
  return { byId, byUid, names, scope };
}

const providerConfigSchema = z.looseObject({
  spec: z.looseObject({
    adoption: z.enum(['Allowed', 'Denied']).optional(),
    namespaces: z.looseObject({ names: z.array(z.string()).optional(), selector: z.unknown().optional() }),
  }),
});

/** What the account says of adoption, which `Observe` needs: stated, never guessed. */
async function adoptionOf(kube: KubeClient, { providerConfig, namespace }: Destination): Promise<string[]> {
  const name = providerConfig ?? 'default';
  const general =
    'Observe adopts: where the account does not allow adoption, the operator refuses each resource ' +
    '(Synced=False, AdoptionNotAllowed) and touches nothing. A platform team imports for a tenant with ' +
    '-n TENANT --provider-config ACCOUNT, and allows adoption on that ProviderConfig (spec.adoption: Allowed) ' +
    'while the resources are applied.';
  let config: z.output<typeof providerConfigSchema>;
  try {
    config = await kube.request(providerConfigSchema, {
      method: 'GET',
      path: objectPath(resourceOf(providerConfigKind), { namespace: '', name }),
    });
  } catch (error) {
    if (isStatus(error, 404) && providerConfig === undefined) {
      return [
        "account: the operator's own (its flags); adoption follows its --default-adoption (chart operator.defaultAdoption), " +
          'allowed unless the platform team turned it off because several teams share it.',
        general,
      ];
    }
    if (isStatus(error, 404)) {
      throw new CommandError(`ProviderConfig ${name} not found: check --provider-config`, EXIT.notFound);
    }
    if (isStatus(error, 403)) {
      return [
        `account ${name}: your RBAC cannot read its ProviderConfig, so whether it allows adoption is unknown; ask the platform team.`,
        general,
      ];
    }
    throw error;
  }
  const { adoption, namespaces } = config.spec;
  const listed = namespaces.names ?? [];
  const shared = !(listed.length === 1 && namespaces.selector === undefined);
  const verdict = adoption
    ? `adoption ${adoption} (spec.adoption)`
    : `adoption ${shared ? 'Denied' : 'Allowed'} by default (${shared ? 'several namespaces share it' : 'one namespace uses it'})`;
  const lines = [`account ${name}: ${verdict}.`];
  if (!listed.includes(namespace) && namespaces.selector === undefined) {
    lines.push(
      `namespace ${namespace} is not among ProviderConfig ${name}'s namespaces: the operator would refuse the resources (ProviderConfigNotAllowed).`,
    );
  }
  return [...lines, general];
}

/** The manifests, as YAML documents with their notes as comments, as a JSON List, or as a table. */
export function renderImport(result: ImportResult, format: OutputFormat): string {
  if (format === 'json') {
    const items = result.imported.map(({ manifest }) => manifest);
    return `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items }, null, 2)}\n`;
  }
  if (format === 'table') {
    return table(
      ['kind', 'name', 'id', 'cloud name', 'phase', 'region'],
      result.imported.map((each) => [
        each.kind,
        each.manifest.metadata.name,
        each.id,
        each.cloudName,
        each.phase,
        each.region,
      ]),
    );
  }
  return result.imported.map(documentOf).join('---\n');
}

/** One manifest as YAML: a header naming the cloud object, its notes, and its placeholders marked inline. */
export function documentOf(each: Imported): string {
  const header = [
    `# ${each.kind} ${each.id} "${each.cloudName}" (${each.phase}${each.region ? `, ${each.region}` : ''}), imported by gpucloud import`,
    ...each.notes.map((note) => `# ${note}`),
  ];
  let yaml = dump(each.manifest, { noRefs: true, lineWidth: -1 });
  for (const [field, why] of Object.entries(each.placeholders)) {
    yaml = yaml.replace(new RegExp(`^(  ${field}: .*)$`, 'm'), `$1  # ${why}`);
  }
  return `${header.join('\n')}\n${yaml}`;
}

/** One file per resource, `<kind>-<name>.yaml`, ready to commit: the paths written. */
export async function writeImport(result: ImportResult, dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const each of result.imported) {
    const path = join(dir, `${each.kind.toLowerCase()}-${each.manifest.metadata.name}.yaml`);
    await writeFile(path, documentOf(each));
    written.push(path);
  }
  return written;
}

/** What the user must know: what was imported, skipped and renamed, the Secrets to create, adoption. */
export function importReport(result: ImportResult): string {
  const lines = [
    result.imported.length === 0
      ? 'nothing new to import: every object that matches is held by a resource'
      : `imported ${result.imported.length}: ${result.imported.map((each) => `${each.kind.toLowerCase()}/${each.manifest.metadata.name}`).join(', ')}`,
  ];
  for (const each of result.skipped) {
    lines.push(`skipped ${each.kind} ${each.id} "${each.cloudName}": held by ${each.by}`);
  }
  for (const each of result.renamed) {
    lines.push(`renamed ${each.kind} ${each.id} "${each.cloudName}" to ${each.name}: ${each.why}`);
  }
  for (const each of result.imported) {
    if (each.secret) {
      lines.push(
        `create Secret ${each.secret.name} -n ${each.manifest.metadata.namespace} (keys ${each.secret.keys.join(', ')}) for ${each.kind.toLowerCase()}/${each.manifest.metadata.name}`,
      );
    }
    for (const why of Object.values(each.placeholders)) {
      lines.push(`${each.kind.toLowerCase()}/${each.manifest.metadata.name}: ${why}`);
    }
  }
  if (result.claimsSeen === 'namespace') {
    lines.push(
      'claims were read in your namespace only (your RBAC lists no more): an object a resource of another namespace holds is refused by the operator (AlreadyManaged) when applied.',
    );
  }
  return `${[...lines, ...result.adoption].join('\n')}\n`;
}
