import { z } from 'zod';
import type { KindDefinition, PrinterColumn, ScaleSubresource } from '../../src/resources/common/kind.ts';
import { type StructuralSchema, toStructuralSchema } from './structural-schema.ts';

/** A CustomResourceDefinition (apiextensions.k8s.io/v1) with one served and stored version. */
export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames: string[];
      categories: string[];
    };
    scope: 'Namespaced' | 'Cluster';
    versions: Array<{
      name: string;
      served: true;
      storage: true;
      schema: { openAPIV3Schema: StructuralSchema };
      subresources: { status: Record<string, never>; scale?: ScaleSubresource };
      additionalPrinterColumns: PrinterColumn[];
    }>;
  };
}

// Argo CD applies lower waves first: the CRDs must exist before any custom resource syncs.
const SYNC_WAVE = { 'argocd.argoproj.io/sync-wave': '-1' };
const LABELS = {
  'app.kubernetes.io/name': 'gpucloud-operator',
  'app.kubernetes.io/part-of': 'gpucloud-operator',
};

export function buildCrd(kind: KindDefinition): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${kind.plural}.${kind.group}`, labels: { ...LABELS }, annotations: { ...SYNC_WAVE } },
    spec: {
      group: kind.group,
      names: {
        kind: kind.kind,
        listKind: kind.listKind,
        plural: kind.plural,
        singular: kind.singular,
        shortNames: [...kind.shortNames],
        categories: [...kind.categories],
      },
      scope: kind.scope,
      versions: [
        {
          name: kind.version,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: rootSchema(kind) },
          subresources: kind.scale === undefined ? { status: {} } : { status: {}, scale: { ...kind.scale } },
          additionalPrinterColumns: kind.printerColumns.map((column) => ({ ...column })),
        },
      ],
    },
  };
}

function rootSchema(kind: KindDefinition): StructuralSchema {
  const object = z.object({ spec: kind.spec, status: kind.status.optional() }).describe(kind.description);
  const root =
    kind.rules.length === 0 ? object : object.meta({ 'x-kubernetes-validations': [...kind.rules] });
  const { properties, ...rest } = toStructuralSchema(root, kind.kind);
  return {
    ...rest,
    properties: {
      apiVersion: {
        description:
          'APIVersion defines the versioned schema of this representation of an object. Servers should convert ' +
          'recognized schemas to the latest internal value, and may reject unrecognized values.',
        type: 'string',
      },
      kind: {
        description:
          'Kind is a string value representing the REST resource this object represents. Servers may infer this ' +
          'from the endpoint the client submits requests to. In CamelCase.',
        type: 'string',
      },
      metadata: { type: 'object' },
      ...properties,
    },
  };
}
