import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { z } from 'zod';
import { CHECKED_FORMATS, UNCHECKED_FORMATS } from './formats.ts';

// What the offline admission reads of a CustomResourceDefinition: its names, scope, and each served
// version's OpenAPI schema. The schema node is strict on purpose: it lists exactly the keywords the
// evaluator implements, so a CRD that starts using another one (anyOf, x-kubernetes-int-or-string,
// messageExpression, ...) fails to load, with the keyword named, instead of being judged without it.

const celRuleSchema = z.strictObject({
  rule: z.string().min(1),
  message: z.string().optional(),
  fieldPath: z.string().optional(),
  reason: z
    .enum(['FieldValueInvalid', 'FieldValueForbidden', 'FieldValueRequired', 'FieldValueDuplicate'])
    .optional(),
});
export type CelRule = z.output<typeof celRuleSchema>;

const TYPES = ['object', 'array', 'string', 'integer', 'number', 'boolean'] as const;
export type SchemaType = (typeof TYPES)[number];

export const schemaPropsSchema = z.strictObject({
  description: z.string().optional(),
  type: z.enum(TYPES).optional(),
  format: z
    .enum([...(Object.keys(CHECKED_FORMATS) as Array<keyof typeof CHECKED_FORMATS>), ...UNCHECKED_FORMATS])
    .optional(),
  enum: z.array(z.unknown()).optional(),
  default: z.unknown().optional(),
  nullable: z.boolean().optional(),
  minimum: z.number().optional(),
  exclusiveMinimum: z.boolean().optional(),
  maximum: z.number().optional(),
  exclusiveMaximum: z.boolean().optional(),
  multipleOf: z.number().optional(),
  minLength: z.int().optional(),
  maxLength: z.int().optional(),
  pattern: z.string().optional(),
  minItems: z.int().optional(),
  maxItems: z.int().optional(),
  minProperties: z.int().optional(),
  maxProperties: z.int().optional(),
  required: z.array(z.string()).optional(),
  get items() {
    return schemaPropsSchema.optional();
  },
  get properties() {
    return z.record(z.string(), schemaPropsSchema).optional();
  },
  get additionalProperties() {
    return schemaPropsSchema.optional();
  },
  'x-kubernetes-preserve-unknown-fields': z.boolean().optional(),
  'x-kubernetes-list-type': z.enum(['atomic', 'set', 'map']).optional(),
  'x-kubernetes-list-map-keys': z.array(z.string()).optional(),
  'x-kubernetes-validations': z.array(celRuleSchema).optional(),
});
/** One node of a CRD's structural schema (OpenAPI v3 with the Kubernetes extensions). */
export type SchemaProps = z.output<typeof schemaPropsSchema>;

const crdSchema = z.object({
  apiVersion: z.literal('apiextensions.k8s.io/v1'),
  kind: z.literal('CustomResourceDefinition'),
  spec: z.object({
    group: z.string(),
    names: z.looseObject({ kind: z.string(), plural: z.string() }),
    scope: z.enum(['Namespaced', 'Cluster']),
    versions: z.array(
      z.looseObject({
        name: z.string(),
        served: z.boolean(),
        schema: z.object({ openAPIV3Schema: schemaPropsSchema }),
        subresources: z.looseObject({ status: z.object({}).optional() }).optional(),
      }),
    ),
  }),
});

/** One served version of a custom resource kind, as admission judges its objects. */
export interface CustomKind {
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  readonly schema: SchemaProps;
  /** A status subresource: a create drops the status it is sent. */
  readonly statusSubresource: boolean;
}

/** The kinds of a set of CRDs, by `apiVersion` and `kind`. */
export class CustomKinds {
  readonly #kinds: ReadonlyMap<string, CustomKind>;
  readonly groups: ReadonlySet<string>;

  constructor(kinds: readonly CustomKind[]) {
    this.#kinds = new Map(kinds.map((kind) => [`${kind.apiVersion}/${kind.kind}`, kind]));
    this.groups = new Set(kinds.map((kind) => kind.apiVersion.split('/')[0] ?? ''));
  }

  find(apiVersion: string, kind: string): CustomKind | undefined {
    return this.#kinds.get(`${apiVersion}/${kind}`);
  }
}

/** The served versions of every CRD in the `.yaml` files of `dir`; a CRD the evaluator cannot judge throws. */
export async function loadCustomKinds(dir: string): Promise<CustomKinds> {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.yaml')).sort();
  const kinds: CustomKind[] = [];
  for (const file of files) {
    for (const document of loadAll(await readFile(join(dir, file), 'utf8'))) {
      const parsed = crdSchema.safeParse(document);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new Error(
          `${file}: not a CRD the offline admission can judge: ${issue?.path.join('.')}: ${issue?.message}`,
        );
      }
      const { group, names, scope, versions } = parsed.data.spec;
      for (const version of versions.filter((each) => each.served)) {
        kinds.push({
          apiVersion: `${group}/${version.name}`,
          kind: names.kind,
          plural: names.plural,
          namespaced: scope === 'Namespaced',
          schema: version.schema.openAPIV3Schema,
          statusSubresource: version.subresources?.status !== undefined,
        });
      }
    }
  }
  return new CustomKinds(kinds);
}
