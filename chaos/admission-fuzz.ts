import { readdir, readFile } from 'node:fs/promises';
import { loadAllYaml } from '@kubernetes/client-node';
import { z } from 'zod';
import { KubeApiError } from '../src/kube/client.ts';
import { collectionPath } from '../src/kube/resource-type.ts';
import type { Cluster } from '../test/support/operator.ts';
import { type KindName, manifest, resourceOf, type Spec } from './workload.ts';

// Every field of every kind, made invalid in every way its schema forbids, must be refused at
// admission with a message that names the field. The cases are derived from the committed CRDs, so a
// field added later is covered without touching this file.

interface SchemaNode {
  type?: string | undefined;
  properties?: Record<string, SchemaNode> | undefined;
  items?: SchemaNode | undefined;
  additionalProperties?: SchemaNode | boolean | undefined;
  required?: string[] | undefined;
  minLength?: number | undefined;
  maxLength?: number | undefined;
  pattern?: string | undefined;
  enum?: unknown[] | undefined;
  minimum?: number | undefined;
  maximum?: number | undefined;
  exclusiveMinimum?: boolean | undefined;
  minItems?: number | undefined;
  maxItems?: number | undefined;
}

const schemaNode: z.ZodType<SchemaNode> = z.lazy(() =>
  z.looseObject({
    type: z.string().optional(),
    properties: z.record(z.string(), schemaNode).optional(),
    items: schemaNode.optional(),
    additionalProperties: z.union([schemaNode, z.boolean()]).optional(),
    required: z.array(z.string()).optional(),
    minLength: z.number().optional(),
    maxLength: z.number().optional(),
    pattern: z.string().optional(),
    enum: z.array(z.unknown()).optional(),
    minimum: z.number().optional(),
    maximum: z.number().optional(),
    exclusiveMinimum: z.boolean().optional(),
    minItems: z.number().optional(),
    maxItems: z.number().optional(),
  }),
);

const crdSchema = z.looseObject({
  spec: z.looseObject({
    names: z.looseObject({ kind: z.string() }),
    versions: z.array(
      z.looseObject({
        schema: z.looseObject({
          openAPIV3Schema: z.looseObject({ properties: z.looseObject({ spec: schemaNode }) }),
        }),
      }),
    ),
  }),
});

/** Strings an attacker might try; each case uses the first one its field's pattern refuses. */
const HOSTILE = [
  "'; DROP TABLE pods;--",
  '$(rm -rf /)',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '\u202eevil\u0000',
  '💥',
];

/** One invalid spec: the field it breaks, how, and the path the refusal must name. */
interface AdmissionCase {
  readonly kind: KindName;
  readonly path: string;
  readonly how: string;
  readonly spec: Spec;
}

type Segment = string | number;

/** A spec whose every optional field is set, so that every field has a value to break. */
const FULL_SPECS: Readonly<Record<KindName, Spec>> = {
  GpuPod: {
    name: 'full',
    regions: ['us-east-1'],
    image: 'pytorch/pytorch:2.4.0',
    imageRegistry: 'https://registry.example.com',
    imagePublicType: 'PRIVATE',
    containerRegistryAuthId: 7,
    resourceType: 'GPU',
    gpuType: 'NVIDIA L40S',
    gpuCount: 2,
    isSpot: true,
    maxPrice: 2.5,
    shmInGb: 8,
    minSingleCardRamInGb: 16,
    minSingleCardVramInGb: 24,
    minSingleCardVcpu: 4,
    containerVolumeInGb: 50,
    initializationCommand: 'python train.py',
    environmentVars: [
      { key: 'MODE', value: 'train' },
      { key: 'TOKEN', valueFrom: { secretKeyRef: { name: 'tokens', key: 'hf' } } },
    ],
    expose: [{ port: 8888, protocol: 'HTTP' }],
    volumes: [{ id: 'vol-1', mountPath: '/data' }],
    paused: false,
    deletionPolicy: 'Delete',
  },
  GpuVm: {
    vmTypeId: 401,
    region: 'us-east-1',
    name: 'full',
    isSpot: false,
    volumeMountPaths: { 'vol-1': '/home/data' },
    deletionPolicy: 'Delete',
  },
  ServerlessEndpoint: {
    name: 'full',
    imageRegistry: 'https://registry.example.com',
    image: 'ghcr.io/example/worker:1.0',
    resources: [{ region: 'us-east-1', gpuType: 'NVIDIA L40S', gpuCount: 1 }],
    minSingleCardVramInGb: 24,
    minSingleCardVcpu: 4,
    minSingleCardRamInGb: 16,
    workers: 2,
    credentialId: 3,
    containerVolumeInGb: 20,
    initializationCommand: 'serve',
    envVars: [
      { key: 'MODE', value: 'serve' },
      { key: 'TOKEN', valueFrom: { secretKeyRef: { name: 'tokens', key: 'hf' } } },
    ],
    expose: { port: 80, protocol: 'http' },
    serviceMode: 'QUEUE',
    webhook: 'https://hooks.example.com/results',
    stopped: false,
    deletionPolicy: 'Delete',
  },
};

/** The apiserver's spelling of a field path: `spec.environmentVars[0].key`. */
function display(segments: readonly Segment[]): string {
  return segments.reduce<string>(
    (path, segment) => (typeof segment === 'number' ? `${path}[${segment}]` : `${path}.${segment}`),
    'spec',
  );
}

const REMOVE = Symbol('remove');

function withValue(spec: Spec, segments: readonly Segment[], value: unknown): Spec {
  const copy = structuredClone(spec);
  let parent: Record<string | number, unknown> = copy;
  for (const segment of segments.slice(0, -1)) parent = parent[segment] as Record<string | number, unknown>;
  const last = segments.at(-1) as Segment;
  if (value === REMOVE) delete parent[last];
  else parent[last] = value;
  return copy;
}

/** Ways to break one value of `node`'s type, each with a word on how. */
function breakages(node: SchemaNode, value: unknown): Array<[string, unknown]> {
  const cases: Array<[string, unknown]> = [];
  switch (node.type) {
    case 'string': {
      cases.push(['a number instead of a string', 12345]);
      if (node.maxLength !== undefined)
        cases.push(['one character too long', 'x'.repeat(node.maxLength + 1)]);
      if ((node.minLength ?? 0) > 0) cases.push(['empty', '']);
      if (node.enum) cases.push(['not one of the allowed values', HOSTILE[0]]);
      const pattern = node.pattern === undefined ? undefined : new RegExp(node.pattern, 'u');
      const refused = pattern && HOSTILE.find((candidate) => !pattern.test(candidate));
      if (refused !== undefined) cases.push([`not matching ${node.pattern}`, refused]);
      break;
    }
    case 'integer':
      cases.push(['a string instead of an integer', '1; rm -rf /'], ['a fraction', 1.5]);
      if (node.minimum !== undefined) cases.push(['below the minimum', node.minimum - 1]);
      if (node.maximum !== undefined) cases.push(['above the maximum', node.maximum + 1]);
      break;
    case 'number':
      cases.push(['a string instead of a number', 'NaN']);
      if (node.minimum !== undefined) {
        cases.push(['at or below the minimum', node.exclusiveMinimum ? node.minimum : node.minimum - 1]);
      }
      break;
    case 'boolean':
      cases.push(['a string instead of a boolean', 'true']);
      break;
    case 'array':
      cases.push(['an object instead of a list', { item: 1 }]);
      if (node.maxItems !== undefined && Array.isArray(value)) {
        const first = value[0];
        cases.push(['one item too many', Array.from({ length: node.maxItems + 1 }, () => first)]);
      }
      if ((node.minItems ?? 0) > 0) cases.push(['empty', []]);
      break;
    case 'object':
      cases.push(['a string instead of an object', 'not an object']);
      break;
  }
  return cases;
}

/** Every way to break every field present in `value`, walking the schema alongside it. */
function* casesOf(
  kind: KindName,
  base: Spec,
  node: SchemaNode,
  value: unknown,
  segments: Segment[],
): Generator<AdmissionCase> {
  const path = display(segments);
  if (segments.length > 0) {
    for (const [how, broken] of breakages(node, value)) {
      yield { kind, path, how, spec: withValue(base, segments, broken) };
    }
  }
  if (node.type === 'object' && typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const fields = value as Record<string, unknown>;
    for (const required of node.required ?? []) {
      yield {
        kind,
        path: display([...segments, required]),
        how: 'missing',
        spec: withValue(base, [...segments, required], REMOVE),
      };
    }
    if (node.properties) {
      yield {
        kind,
        path: display([...segments, 'bogusField']),
        how: 'an unknown field',
        spec: withValue(base, [...segments, 'bogusField'], 'x'),
      };
    }
    for (const [key, child] of Object.entries(fields)) {
      const childNode =
        node.properties?.[key] ??
        (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined);
      if (childNode) yield* casesOf(kind, base, childNode, child, [...segments, key]);
    }
  }
  if (node.type === 'array' && node.items && Array.isArray(value)) {
    for (const [index, item] of value.entries())
      yield* casesOf(kind, base, node.items, item, [...segments, index]);
  }
}

async function readSpecSchemas(): Promise<Map<KindName, SchemaNode>> {
  const directory = new URL('../crds/', import.meta.url);
  const files = (await readdir(directory)).filter((file) => file.endsWith('.yaml'));
  const schemas = new Map<KindName, SchemaNode>();
  for (const file of files) {
    for (const document of loadAllYaml(await readFile(new URL(file, directory), 'utf8'))) {
      const crd = crdSchema.parse(document);
      const version = crd.spec.versions[0];
      if (version) {
        schemas.set(crd.spec.names.kind as KindName, version.schema.openAPIV3Schema.properties.spec);
      }
    }
  }
  return schemas;
}

/** Every admission case of every kind. */
async function admissionCases(): Promise<AdmissionCase[]> {
  const cases: AdmissionCase[] = [];
  for (const [kind, schema] of await readSpecSchemas()) {
    cases.push(...casesOf(kind, FULL_SPECS[kind], schema, FULL_SPECS[kind], []));
  }
  return cases;
}

export interface AdmissionOutcome {
  readonly cases: number;
  /** `Kind path: how` of each invalid spec the apiserver accepted. */
  readonly accepted: string[];
  /** Refusals whose message names neither the field nor any field around it. */
  readonly unclear: string[];
}

/**
 * Submits every case (dry run, strict field validation) and checks it is refused with a message that
 * names the field, or an enclosing one (a rule on a list item reports the item). The full specs
 * themselves must be accepted, or the cases would prove nothing.
 */
export async function checkAdmission(cluster: Cluster, namespace: string): Promise<AdmissionOutcome> {
  for (const [kind, spec] of Object.entries(FULL_SPECS) as Array<[KindName, Spec]>) {
    const refusal = await submit(cluster, namespace, kind, spec);
    if (refusal !== undefined) throw new Error(`the full ${kind} spec is refused: ${refusal}`);
  }
  const cases = await admissionCases();
  const outcome: AdmissionOutcome = { cases: cases.length, accepted: [], unclear: [] };
  for (const admission of cases) {
    const label = `${admission.kind} ${admission.path}: ${admission.how}`;
    const refusal = await submit(cluster, namespace, admission.kind, admission.spec);
    if (refusal === undefined) outcome.accepted.push(label);
    else if (!namesField(refusal, admission.path)) outcome.unclear.push(`${label} -> ${refusal}`);
  }
  return outcome;
}

/** Whether `message` names `path` or a field that encloses it (below `spec`). */
function namesField(message: string, path: string): boolean {
  for (let candidate = path; candidate.includes('.') || candidate.includes('['); ) {
    if (message.includes(candidate)) return true;
    candidate = candidate.replace(/(\.[^.[]+|\[\d+\])$/, '');
    if (candidate === 'spec') return false;
  }
  return false;
}

/** The apiserver's refusal message, or undefined when it admits the object. */
async function submit(
  cluster: Cluster,
  namespace: string,
  kind: KindName,
  spec: Spec,
): Promise<string | undefined> {
  try {
    await cluster.client.request(z.unknown(), {
      method: 'POST',
      path: collectionPath(resourceOf(kind), namespace),
      query: { dryRun: 'All', fieldValidation: 'Strict' },
      body: manifest(kind, 'admission-case', spec),
    });
    return undefined;
  } catch (error) {
    if (error instanceof KubeApiError && error.status >= 400 && error.status < 500) return error.message;
    throw error;
  }
}
