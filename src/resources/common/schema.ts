import { z } from 'zod';
import type { CelRule } from '../../kube/schema-meta.ts';
import { listMap, withRules } from '../../kube/schema-meta.ts';
import {
  MANAGEMENT_POLICIES,
  RECOVERY_POLICIES,
  SECRET_ROTATION_POLICIES,
} from '../../managed/core/policies.ts';

// Field schemas shared by the kinds' specs. Lengths and list sizes the API spec leaves open are
// bounded anyway: the apiserver only accepts CEL rules whose worst-case cost it can bound.

export const deletionPolicySchema = z
  .enum(['Delete', 'Orphan'])
  .default('Delete')
  .describe(
    'What happens to the cloud resource when this object is deleted: Delete removes it (and stops the ' +
      'billing), Orphan leaves it running in the cloud.',
  );

/** A port a workload exposes; the cloud gives it an ingress URL. */
export function exposedPortSchema(defaultProtocol: string) {
  return z
    .object({
      port: z.int().min(1).max(65535).describe('Container port to expose, 1 to 65535.'),
      protocol: z
        .string()
        .min(1)
        .max(16)
        .default(defaultProtocol)
        .describe(`Protocol served on the port, as the cloud names it (${defaultProtocol}).`),
    })
    .describe('A container port made reachable from outside through the cloud ingress.');
}

/** A Kubernetes object name of the DNS-subdomain form (RFC 1123): what Secrets and namespaces take. */
export const dnsSubdomainSchema = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, {
    message:
      'must be a DNS subdomain: lower-case letters, digits, "-" and ".", starting and ending alphanumeric',
  });

const secretKeyRefSchema = z
  .object({
    name: dnsSubdomainSchema.describe('Name of a Secret in the namespace of this object.'),
    key: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[-._a-zA-Z0-9]+$/)
      .describe('Key in the Secret whose value becomes the value of the variable.'),
  })
  .describe('Selects one key of a Secret in the same namespace.');

/** Prefix of the environment variables the operator sets itself (the owner marker). */
export const OPERATOR_ENV_PREFIX = 'GPUCLOUD_';

/**
 * A list of environment variables whose values are literal or read from Secrets. `reservedKeys`
 * are variables the cloud sets itself; they and the operator's prefix are refused at admission.
 */
export function environmentVariablesSchema(workload: string, reservedKeys: readonly string[]) {
  const keyRules = [
    ...reservedKeys.map((reserved) => ({
      rule: `self != '${reserved}'`,
      message: `${reserved} is reserved: the cloud sets it on every ${workload}`,
    })),
    {
      rule: `!self.startsWith('${OPERATOR_ENV_PREFIX}')`,
      message: `names starting with ${OPERATOR_ENV_PREFIX} are reserved for the operator`,
    },
  ];
  const item = withRules(
    z
      .object({
        key: withRules(z.string().min(1).max(255), keyRules).describe('Name of the environment variable.'),
        value: z
          .string()
          .max(32768)
          .optional()
          .describe('Literal value. Exactly one of value and valueFrom is set.'),
        valueFrom: z
          .object({ secretKeyRef: secretKeyRefSchema })
          .optional()
          .describe(
            'Source of the value: a key of a Secret in the same namespace, which the operator reads. ' +
              'Exactly one of value and valueFrom is set.',
          ),
      })
      .describe('One environment variable.'),
    [{ rule: 'has(self.value) != has(self.valueFrom)', message: 'set exactly one of value and valueFrom' }],
  );
  return listMap(z.array(item).max(128), ['key']);
}

export const imageSchema = z.string().min(1).max(255);
export const imageRegistrySchema = z.string().max(255);
export const regionSchema = z.string().min(1).max(64);
export const gpuTypeSchema = z.string().min(1).max(128);
export const mountPathSchema = z.string().min(2).max(255).regex(/^\//);
export const initializationCommandSchema = z.string().max(8192);
/** Sizes and minimum per-card resources, in the cloud's units (GB, vCPU). */
export const sizeSchema = z.int32().min(0);
/** A cloud id the user refers to (registry credential ids): positive, 64-bit in the cloud. */
export const cloudIdSchema = z.int().min(1);

export const providerConfigRefSchema = z
  .object({ name: dnsSubdomainSchema.describe('Name of the ProviderConfig.') })
  .optional()
  .describe(
    'The cloud account (a cluster-scoped ProviderConfig) this resource uses; the one named default when unset. Immutable once the resource has a cloud id.',
  );

/** On the whole object: a rule on the spec cannot see status.id. */
export const providerConfigRefRule: CelRule = {
  rule:
    '!has(oldSelf.status) || !has(oldSelf.status.id) || (has(self.spec.providerConfigRef) ? ' +
    '(has(oldSelf.spec.providerConfigRef) && self.spec.providerConfigRef.name == oldSelf.spec.providerConfigRef.name) : ' +
    '!has(oldSelf.spec.providerConfigRef))',
  message:
    'providerConfigRef is immutable once the resource has a cloud id (status.id): its object lives in that account',
  fieldPath: '.spec.providerConfigRef',
};

export const writeConnectionSecretToRefSchema = z
  .object({ name: dnsSubdomainSchema.describe('Name of the Secret, in the namespace of this resource.') })
  .optional()
  .describe(
    'A Secret of this namespace to write what a workload needs to reach the resource into (SSH command, ' +
      'addresses, URLs; the keys of each kind are in docs/design.md §3). The Secret is created, owned by this ' +
      'resource and updated as those change; an existing Secret this resource does not control is never overwritten.',
  );

/** Said of every field the operator fills from the cloud when a user leaves it out. */
export const LATE_INITIALIZED =
  'Filled from the cloud when left out, once, when the resource is created or adopted.';

export const managementPoliciesSchema = z
  .array(z.enum(MANAGEMENT_POLICIES))
  .min(1)
  .max(MANAGEMENT_POLICIES.length)
  .meta({
    'x-kubernetes-list-type': 'set',
    'x-kubernetes-validations': [
      {
        rule: "!self.exists(p, p == '*') || self.size() == 1",
        message: "'*' allows every action and stands alone: remove the other entries",
      },
      {
        rule: "self.exists(p, p == '*' || p == 'Observe')",
        message: 'a list without * must include Observe: the operator always reads the cloud object',
      },
    ],
  })
  .optional()
  .describe(
    'What the operator may do to the cloud object, as Crossplane names it: ["*"] (every action, the default), ' +
      '["Observe"] (import by the gpucloud.io/external-id annotation and mirror it into status, never ' +
      'creating, changing or deleting it), or Observe with any of Create, Update, Delete and LateInitialize.',
  );

export const recoveryPolicySchema = z
  .enum(RECOVERY_POLICIES)
  .optional()
  .describe(
    'What happens when the cloud takes a spot object back (it reports FAILED, or it is deleted without ' +
      'the operator asking): Never (the default) leaves it down, Recreate deletes what is left and ' +
      'creates a replacement, with backoff. Only with isSpot: true.',
  );

/** A year: longer than any deadline a user means, and a bound the schema can check. */
const MAX_DEADLINE_SECONDS = 366 * 86_400;

export const activeDeadlineSecondsSchema = z
  .int()
  .min(1)
  .max(MAX_DEADLINE_SECONDS)
  .optional()
  .describe(
    "Seconds the resource may run, counted from its first cloud object's creation (status.startTime, as the " +
      'cloud reports it): an operator restart neither resets nor skips it, and a replacement after ' +
      'preemption does not restart it. Paused time counts, as it does for a Job. When it passes, ' +
      'deadlineAction is taken and the condition DeadlineExceeded is True. Raise it (a new spec) to go on.',
  );

/** On a spot kind's spec: recovery is about spot capacity, asked for by isSpot or by placement. */
export const recoveryNeedsSpotRule: CelRule = {
  rule:
    "!has(self.recoveryPolicy) || self.recoveryPolicy == 'Never' || (has(self.isSpot) && self.isSpot) || " +
    "(has(self.placement) && has(self.placement.spot) && self.placement.spot != 'Never')",
  message:
    'recoveryPolicy Recreate is only for spot capacity: set isSpot: true, or placement.spot Preferred or Required',
  fieldPath: '.recoveryPolicy',
};

/** How many offers one placement tries when none is said. */
export const DEFAULT_PLACEMENT_ATTEMPTS = 3;

/**
 * What a kind that lets the operator choose where its objects run (src/managed/creation/placement.ts) accepts: the
 * GPU models, the order, a price cap per GPU-hour and the spot choice. Each kind adds what it needs.
 */
export const placementShape = {
  gpuTypes: z
    .array(gpuTypeSchema)
    .min(1)
    .max(16)
    .optional()
    .describe(
      'The acceptable GPU models. When omitted, any model with enough memory per GPU (which must then be ' +
        "said). Every one must pass the provider config's GPU-type allow-list.",
    ),
  order: z
    .enum(['Cheapest', 'Listed'])
    .optional()
    .describe(
      'Cheapest (the default): the cheapest offer of any listed type; Listed: the first listed type with ' +
        'an offer, the cheapest of its offers.',
    ),
  maxPricePerGpuHour: z
    .number()
    .positive()
    .optional()
    .describe(
      'Highest price per GPU-hour in USD accepted, on-demand as for spot. No cap when omitted. A spot pod ' +
        'create also carries it to the cloud as its maxPrice (times gpuCount).',
    ),
  spot: z
    .enum(['Never', 'Preferred', 'Required'])
    .optional()
    .describe(
      'Never (the default): on-demand only. Preferred: spot when an offer under the cap has room, else ' +
        'on-demand. Required: spot only.',
    ),
  maxAttempts: z
    .int()
    .min(1)
    .max(10)
    .optional()
    .describe(
      'Offers one placement tries when the cloud refuses them for lack of room, before it waits for the ' +
        `next read of the offers (30 s); ${DEFAULT_PLACEMENT_ATTEMPTS} when omitted.`,
    ),
};

/** On a placement: order Listed follows the list. */
export const listedNeedsTypesRule: CelRule = {
  rule: "!has(self.order) || self.order != 'Listed' || has(self.gpuTypes)",
  message: 'order Listed follows gpuTypes: list them',
  fieldPath: '.order',
};

/** Recreating takes both a delete and a create: a policy list withholding either cannot recover. */
export const recoveryNeedsCreateAndDeleteRule: CelRule = {
  rule:
    "!has(self.recoveryPolicy) || self.recoveryPolicy != 'Recreate' || !has(self.managementPolicies) || " +
    "self.managementPolicies.exists(p, p == '*') || (self.managementPolicies.exists(p, p == 'Create') && " +
    "self.managementPolicies.exists(p, p == 'Delete'))",
  message: 'recoveryPolicy Recreate needs Create and Delete in managementPolicies',
  fieldPath: '.recoveryPolicy',
};

/**
 * Transition rules refusing the removal of fields the cloud API has no way to clear: its update is a
 * partial PATCH, so a field left out keeps its value in the cloud while the spec would say otherwise.
 */
/** `ssh user@host -p 22` or `ssh -p 22 user@host` as its host and port. */
export function sshEndpoint(command: unknown): { sshHost?: string; sshPort?: string } {
  if (typeof command !== 'string') return {};
  const [, ...args] = command.trim().split(/\s+/);
  let host: string | undefined;
  let port: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '-p') port = args[++i];
    else if (!arg.startsWith('-')) host ??= arg.slice(arg.indexOf('@') + 1);
  }
  return { ...(host ? { sshHost: host } : {}), ...(port ? { sshPort: port } : {}) };
}

/** The string-valued entries of `values`, for a connection Secret. */
export function presentStrings(values: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string' && entry[1] !== '',
    ),
  );
}

export function irremovable(fields: Readonly<Record<string, string>>): CelRule[] {
  return Object.entries(fields).map(([field, why]) => ({
    rule: `!has(oldSelf.${field}) || has(self.${field})`,
    message: `${field} cannot be removed: ${why}`,
    fieldPath: `.${field}`,
  }));
}

/**
 * The spec fields that are the operator's business, never the cloud's: every kind of cloud object has
 * them, and none may reach a cloud request (create requests are strict). A field added here is in every
 * kind's schema and stripped from every request by `cloudFieldsOf`.
 */
export const managedSpecShape = {
  writeConnectionSecretToRef: writeConnectionSecretToRefSchema,
  managementPolicies: managementPoliciesSchema,
  deletionPolicy: deletionPolicySchema,
  providerConfigRef: providerConfigRefSchema,
};

/**
 * `spec.ignoreDrift`: the fields the cloud may own (docs/design.md §8.6). Which may be listed is the
 * kind's: fields late initialisation fills, or that drift reports, and no other (CEL names them).
 */
export function ignoreDriftSchema(kind: string, fields: readonly string[]) {
  const names = fields.map((field) => `'${field}'`).join(', ');
  return withRules(
    z.array(z.string().min(1).max(64)).max(fields.length).meta({ 'x-kubernetes-list-type': 'set' }),
    [
      {
        rule: `self.all(f, f in [${names}])`,
        message: `a ${kind} may ignore drift only in ${fields.join(', ')}`,
      },
    ],
  )
    .optional()
    .describe(
      `Fields the cloud may own: the operator neither corrects nor reports a difference in them, and takes ` +
        `the cloud's value as the desired one; late initialisation still fills them once. One of ${fields.join(', ')}.`,
    );
}

/** The spec field that lists the fields the cloud may own; the operator's, never sent to the cloud. */
export const IGNORE_DRIFT = 'ignoreDrift';

/** What a rotated Secret does to an object that keeps the environment it was made with (a pod). */
export const secretRotationPolicySchema = z
  .enum(SECRET_ROTATION_POLICIES)
  .optional()
  .describe(
    'What happens when a Secret the environment reads (valueFrom.secretKeyRef) changes, since the cloud ' +
      'cannot change the environment of a running object: Report (the default) sets Synced=False, reason ' +
      'SecretRotated, naming the Secret; Recreate deletes the cloud object and creates it again with the new ' +
      'values (its container volume is lost).',
  );

/** Recreating takes a delete and a create, as for recovery. */
export const secretRotationNeedsCreateAndDeleteRule: CelRule = {
  rule:
    "!has(self.secretRotationPolicy) || self.secretRotationPolicy != 'Recreate' || !has(self.managementPolicies) || " +
    "self.managementPolicies.exists(p, p == '*') || (self.managementPolicies.exists(p, p == 'Create') && " +
    "self.managementPolicies.exists(p, p == 'Delete'))",
  message: 'secretRotationPolicy Recreate needs Create and Delete in managementPolicies',
  fieldPath: '.secretRotationPolicy',
};

/** The operator's fields some kinds have: never sent to the cloud either. */
const KIND_OPERATOR_FIELDS = [IGNORE_DRIFT, 'secretRotationPolicy'] as const;

export type ManagedSpecField = keyof typeof managedSpecShape | (typeof KIND_OPERATOR_FIELDS)[number];

export const MANAGED_SPEC_FIELDS = Object.keys(managedSpecShape) as Array<keyof typeof managedSpecShape>;

/** The spec without the operator's own fields: what a cloud request may be built from. */
export function cloudFieldsOf<S extends object>(spec: S): Omit<S, ManagedSpecField> {
  const operators: readonly string[] = [...MANAGED_SPEC_FIELDS, ...KIND_OPERATOR_FIELDS];
  const fields = Object.entries(spec).filter(([field]) => !operators.includes(field));
  return Object.fromEntries(fields) as Omit<S, ManagedSpecField>;
}
