import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import type { z } from 'zod';
import type { ResourceType } from '../../kube/resource-type.ts';
import type { CelRule } from '../../kube/schema-meta.ts';

export const GROUP = 'gpucloud.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
/** `kubectl get gpucloud` lists every kind of the operator. */
export const CATEGORY = 'gpucloud';

export interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  readonly jsonPath: string;
  readonly description: string;
  /** 0 shows the column in `kubectl get`; higher values only with `-o wide`. */
  readonly priority?: number;
}

export interface ScaleSubresource {
  readonly specReplicasPath: string;
  readonly statusReplicasPath: string;
  /** A string selector in status: the HPA controller refuses a scale target without one, even for External metrics. */
  readonly labelSelectorPath?: string;
}

/** Everything about one kind that the CRD and the operator need, derived from its zod schemas. */
export interface KindDefinition<
  Spec extends z.ZodObject = z.ZodObject,
  Status extends z.ZodObject = z.ZodObject,
  Kind extends string = string,
> {
  readonly group: typeof GROUP;
  readonly version: typeof VERSION;
  readonly apiVersion: typeof API_VERSION;
  readonly kind: Kind;
  readonly listKind: `${Kind}List`;
  readonly scope: 'Namespaced' | 'Cluster';
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  /** Shown by `kubectl explain <kind>`. */
  readonly description: string;
  readonly spec: Spec;
  readonly status: Status;
  /** CEL rules on the whole object: the only place where a rule can read metadata.name. */
  readonly rules: readonly CelRule[];
  readonly printerColumns: readonly PrinterColumn[];
  readonly scale?: ScaleSubresource;
  /** Its resources finish, and the operator deletes them after their ttlSecondsAfterFinished. */
  readonly finite?: boolean;
}

type KindInput<Spec extends z.ZodObject, Status extends z.ZodObject, Kind extends string> = Omit<
  KindDefinition<Spec, Status, Kind>,
  | 'group'
  | 'version'
  | 'apiVersion'
  | 'listKind'
  | 'singular'
  | 'categories'
  | 'rules'
  | 'printerColumns'
  | 'scope'
> & {
  readonly rules?: readonly CelRule[];
  /** Namespaced unless said otherwise. */
  readonly scope?: 'Namespaced' | 'Cluster';
  /** Whether a Phase column (status.phase, the cloud's state) leads the columns; true unless said otherwise. */
  readonly phaseColumn?: boolean;
  /** Columns between Phase and Ready; Phase, Ready and Age are common to every kind. */
  readonly columns: readonly PrinterColumn[];
};

export function defineKind<Spec extends z.ZodObject, Status extends z.ZodObject, Kind extends string>(
  input: KindInput<Spec, Status, Kind>,
): KindDefinition<Spec, Status, Kind> {
  const { columns, rules = [], scope = 'Namespaced', phaseColumn = true, ...rest } = input;
  const phase: PrinterColumn[] = phaseColumn
    ? [
        {
          name: 'Phase',
          type: 'string',
          jsonPath: '.status.phase',
          description: 'Status of the cloud resource.',
        },
      ]
    : [];
  return {
    ...rest,
    scope,
    group: GROUP,
    version: VERSION,
    apiVersion: API_VERSION,
    listKind: `${input.kind}List`,
    singular: input.kind.toLowerCase(),
    categories: [CATEGORY],
    rules,
    printerColumns: [
      ...phase,
      ...columns,
      {
        name: 'Ready',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].status',
        description: 'Whether the cloud resource exists and matches the spec.',
      },
      {
        name: 'Age',
        type: 'date',
        jsonPath: '.metadata.creationTimestamp',
        description: 'Time since creation.',
      },
    ],
  };
}

/** Where a kind's objects live in the API. */
export function resourceOf(kind: KindDefinition): ResourceType {
  const { group, version, plural } = kind;
  return { group, version, plural, kind: kind.kind, namespaced: kind.scope === 'Namespaced' };
}

/** A custom resource of a kind, as read from the apiserver. */
export interface CustomResource<K extends KindDefinition> extends KubernetesObject {
  apiVersion: typeof API_VERSION;
  kind: K['kind'];
  metadata: V1ObjectMeta;
  spec: z.output<K['spec']>;
  status?: z.output<K['status']>;
}
