import { managedKinds } from '../resources/kinds.ts';
import { usageError } from './errors.ts';
import {
  IMPORTED_KINDS,
  type ImportedKind,
  importFleet,
  importReport,
  renderImport,
  writeImport,
} from './import.ts';
import type { OutputFormat } from './output.ts';
import {
  accountCredentials,
  type Connections,
  cloudClient,
  explicitCredentials,
  kubeClient,
} from './target.ts';

/** The flags of `gpucloud import`, as the CLI's command table takes them. */
export const IMPORT_FLAGS = {
  kind: {
    type: 'string',
    multiple: true,
    value: 'KIND',
    help: 'gpupod, gpuvm or sle only (repeat for more); all three by default',
  },
  name: {
    type: 'string',
    value: 'GLOB',
    help: 'cloud names matching this glob only (* and ?, case-insensitive)',
  },
  region: { type: 'string', multiple: true, value: 'REGION', help: 'this region only (repeat for more)' },
  status: {
    type: 'string',
    multiple: true,
    value: 'STATUS',
    help: 'this cloud status only: RUNNING, PAUSED, STOPPED, ... (repeat for more)',
  },
  dir: {
    type: 'string',
    value: 'DIR',
    help: 'write one file per resource (<kind>-<name>.yaml) there, ready for Git,\ninstead of the manifests on standard output',
  },
  'provider-config': {
    type: 'string',
    value: 'NAME',
    help: "the account to read (its key, when your RBAC may read it) and the\nresources' spec.providerConfigRef; the default account otherwise",
  },
  'full-management': {
    type: 'boolean',
    help: 'managementPolicies ["*"] instead of ["Observe"]: the operator then\nmanages what it adopts (it still changes nothing that matches)',
  },
} as const;

export const IMPORT_NOTES =
  "Reads the account's pods, VMs and endpoints and writes a manifest for each one no resource holds:\n" +
  'annotation gpucloud.io/external-id set, managementPolicies ["Observe"], every field the cloud reports\n' +
  'that the spec carries. Objects a resource holds are skipped and listed. What the cloud adds (POD_ID,\n' +
  "the operator's owner marker) is left out; env values are never written: each becomes a reference to a\n" +
  "Secret <name>-env you create. A VM's type, which the cloud does not report, is inferred from the VM\n" +
  'types listing, or left as a placeholder (0) that admission refuses. Cloud names become Kubernetes\n' +
  'names; a name taken gets the cloud id appended. -n sets the namespace of the manifests: a platform\n' +
  'team imports for a tenant with -n TENANT --provider-config ACCOUNT. -o yaml (the default) prints the\n' +
  'manifests, -o json a List, -o table what would be imported; the report goes to standard error.\n' +
  'Observe adopts, so the account must allow adoption (denied by default on an account several\n' +
  'namespaces share): the report says what the account allows.';

type Values = Readonly<Record<string, string | boolean | Array<string | boolean> | undefined>>;

const KINDS_BY_ALIAS = new Map<string, ImportedKind>(
  managedKinds.flatMap((kind) => {
    const imported = IMPORTED_KINDS.find((candidate) => candidate === kind.kind);
    return imported
      ? [kind.kind.toLowerCase(), kind.plural, kind.singular, ...kind.shortNames].map(
          (alias) => [alias, imported] as const,
        )
      : [];
  }),
);

/** `gpucloud import` (`-o yaml` unless told otherwise): prints or writes the manifests, and reports to standard error (or out, with --dir). */
export async function runImport(
  values: Values,
  connections: Connections,
  format: OutputFormat,
): Promise<number> {
  const kinds = strings(values.kind).map((alias) => {
    const kind = KINDS_BY_ALIAS.get(alias.toLowerCase());
    if (!kind) throw usageError(`--kind takes gpupod, gpuvm or sle, not "${alias}"`);
    return kind;
  });
  const providerConfig =
    typeof values['provider-config'] === 'string' ? values['provider-config'] : undefined;
  const kube = await kubeClient(connections);
  const credentials =
    (providerConfig === undefined ? undefined : await accountCredentials(kube, providerConfig)) ??
    explicitCredentials(connections, 'import');
  const client = cloudClient(credentials);
  try {
    const result = await importFleet(client, kube, {
      kinds: kinds.length === 0 ? IMPORTED_KINDS : kinds,
      name: typeof values.name === 'string' ? values.name : undefined,
      regions: strings(values.region),
      statuses: strings(values.status).map((status) => status.toUpperCase()),
      destination: {
        namespace: connections.namespace ?? 'default',
        providerConfig,
        managementPolicies: values['full-management'] === true ? ['*'] : ['Observe'],
      },
    });
    const dir = typeof values.dir === 'string' ? values.dir : undefined;
    if (dir === undefined) {
      process.stdout.write(renderImport(result, format));
      process.stderr.write(importReport(result));
    } else {
      const written = await writeImport(result, dir);
      process.stdout.write(
        `${written.map((path) => `wrote ${path}`).join('\n')}${written.length ? '\n' : ''}`,
      );
      process.stdout.write(importReport(result));
    }
    return 0;
  } finally {
    await client.close();
  }
}

function strings(value: Values[string]): string[] {
  return Array.isArray(value) ? value.filter((each) => typeof each === 'string') : [];
}
