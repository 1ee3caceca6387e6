// What a Pod's mapping reads beyond the Pod: the GPU types its node can place (the account's shared price
// book, which the node's capacity is read from too), the ConfigMaps its environment names and the facts of
// the Secrets it names (never a value).
import { z } from 'zod';
import { isStatus, type KubeClient } from '../kube/client.ts';
import { configMaps, objectPath, type ResourceType, secrets } from '../kube/resource-type.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { priceBookOf } from '../resources/pricing/books.ts';
import { nodeCapacity } from './capacity.ts';
import type { AccountEntries } from './node-controller.ts';
import { type SecretFacts, secretFacts } from './pull-secrets.ts';

/** The GPU types the node of `config` can place now; none while its account or offers cannot be read. */
export async function nodeGpuTypes(
  accounts: AccountEntries,
  config: string,
  allowed: readonly string[] | undefined,
  clock: Clock,
  log: Logger,
): Promise<readonly string[]> {
  const entry = accounts.get(config);
  if (!entry || entry.problem) return [];
  try {
    const offers = await priceBookOf(entry.account.client, clock).offers(() => true);
    return nodeCapacity({ gpuTypes: allowed && new Set(allowed), maxPods: 0 }, offers.items).gpuTypes;
  } catch (error) {
    log.warn({ providerConfig: config, err: error }, 'the GPU offers could not be read');
    return [];
  }
}

const configMapSchema = z
  .looseObject({ data: z.record(z.string(), z.string()).nullish() })
  .transform((found) => found.data ?? {});

/** A Secret as facts at once: its values are dropped in the parse, and go nowhere. */
const secretSchema = z
  .looseObject({
    type: z.string().optional(),
    metadata: z.looseObject({ annotations: z.record(z.string(), z.string()).nullish() }),
    data: z.record(z.string(), z.string()).nullish(),
  })
  .transform(({ type, metadata, data }) =>
    secretFacts({ type, annotations: metadata.annotations ?? undefined, data }),
  );

/** The data of each ConfigMap `names` of `namespace`; undefined for one that does not exist. */
export const readConfigMaps = (client: KubeClient, namespace: string, names: readonly string[]) =>
  readEach(client, configMaps, configMapSchema, namespace, names);

/** The facts of each Secret `names` of `namespace`; undefined for one that does not exist. */
export const readSecrets = (
  client: KubeClient,
  namespace: string,
  names: readonly string[],
): Promise<Map<string, SecretFacts | undefined>> => readEach(client, secrets, secretSchema, namespace, names);

async function readEach<T>(
  client: KubeClient,
  resource: ResourceType,
  schema: z.ZodType<T>,
  namespace: string,
  names: readonly string[],
): Promise<Map<string, T | undefined>> {
  const read = async (name: string) => {
    try {
      return await client.request(schema, { method: 'GET', path: objectPath(resource, { namespace, name }) });
    } catch (error) {
      if (isStatus(error, 404)) return undefined;
      throw error;
    }
  };
  return new Map(await Promise.all(names.map(async (name) => [name, await read(name)] as const)));
}
