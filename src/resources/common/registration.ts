import type { z } from 'zod';
import type { GpuCloudClient } from '../../api/client.ts';
import type { Clock } from '../../lib/clock.ts';
import type { CommonSpec, ExternalKind } from '../../managed/core/external-kind.ts';
import type { FleetResource, Usage } from '../../managed/core/fleet-metrics.ts';
import {
  type AddController,
  addManagedController,
  type Peers,
} from '../../managed/reconciler/kind-controller.ts';
import { type KindDefinition, resourceOf } from './kind.ts';

/** What the operator offers every adapter when it makes it. */
export interface AdapterOptions {
  /** The URL the cloud posts lifecycle callbacks to, when the operator serves one. */
  callbackUrl?: string | undefined;
  /** How fresh the task counts of an autoscaled endpoint are kept (`--queue-interval`). */
  queueIntervalMs: number;
}

/** What the kind's adapter is made with: the operator's options and the resources it refers to. */
export interface AdapterContext extends AdapterOptions {
  peers: Peers;
  /** Where the adapter reads the time (a metrics window's end, a cost so far): the operator's clock. */
  clock: Clock;
}

/** One managed kind: its definition (the CRD) and how to run its controller. */
export interface Registration<Definition extends KindDefinition = KindDefinition> {
  readonly definition: Definition;
  /** What a resource of the kind holds and costs now, from its spec and status; none for kinds that hold nothing. */
  readonly usage?: ((resource: FleetResource) => Usage) | undefined;
  /** The kind's controller, its adapters made with `options`, to add to the operator's manager. */
  controller(options: AdapterOptions): AddController;
}

/** Joins a kind's definition with its adapter: the one line that adds a kind to the operator. */
export function managedKind<Definition extends KindDefinition, Spec extends CommonSpec, Cloud>(
  definition: Definition & { spec: z.ZodType<Spec> },
  adapter: (client: GpuCloudClient, context: AdapterContext) => ExternalKind<Spec, Cloud>,
  extras: {
    /** Kinds whose resources the adapter reads through `context.peers`. */
    references?: readonly KindDefinition[];
    usage?: (resource: FleetResource) => Usage;
  } = {},
): Registration<Definition> {
  const { references = [], usage } = extras;
  return {
    definition,
    usage,
    controller: (options) => (manager, settings, logger) =>
      addManagedController(
        manager,
        {
          resource: resourceOf(definition),
          references: references.map(resourceOf),
          usage,
          adapterFor: (client, peers, clock) => adapter(client, { ...options, peers, clock }),
          parseSpec: (raw) => definition.spec.parse(raw),
        },
        settings,
        logger,
      ),
  };
}
