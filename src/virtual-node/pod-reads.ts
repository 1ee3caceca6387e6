// What a Pod's mapping reads beyond the Pod: the GPU types its node can place (the account's shared price
// book, which the node's capacity is read from too) and the ConfigMaps its environment names.
import { z } from 'zod';
import { isStatus, type KubeClient } from '../kube/client.ts';
import { configMaps, objectPath } from '../kube/resource-type.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { priceBookOf } from '../resources/pricing/books.ts';
import { nodeCapacity } from './capacity.ts';
import type { AccountEntries } from './node-controller.ts';

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

const configMapSchema = z.looseObject({ data: z.record(z.string(), z.string()).nullish() });

/** The data of each ConfigMap `names` of `namespace`; undefined for one that does not exist. */
export async function readConfigMaps(
  client: KubeClient,
  namespace: string,
  names: readonly string[],
): Promise<Map<string, Readonly<Record<string, string>> | undefined>> {
  const read = async (name: string) => {
    try {
      const found = await client.request(configMapSchema, {
        method: 'GET',
        path: objectPath(configMaps, { namespace, name }),
      });
      return found.data ?? {};
    } catch (error) {
      if (isStatus(error, 404)) return undefined;
      throw error;
    }
  };
  return new Map(await Promise.all(names.map(async (name) => [name, await read(name)] as const)));
}
