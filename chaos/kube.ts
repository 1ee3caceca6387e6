import { z } from 'zod';
import { sleep } from '../src/lib/delay.ts';
import { KubeApiError, KubeTransportError } from '../src/kube/client.ts';
import { collectionPath } from '../src/kube/resource-type.ts';
import { type Cluster, objectSchema, type TestObject } from '../test/support/operator.ts';
import { KIND_NAMES, type KindName, resourceOf } from './workload.ts';

const listSchema = z.object({ items: z.array(objectSchema) });

/** Every custom resource of the operator's kinds in `namespace`, keyed `Kind/name`. */
export async function readResources(cluster: Cluster, namespace: string): Promise<Map<string, TestObject>> {
  const lists = await Promise.all(
    KIND_NAMES.map(async (kind) => {
      const list = await cluster.client.request(listSchema, {
        method: 'GET',
        path: collectionPath(resourceOf(kind), namespace),
      });
      return list.items.map((item) => [`${kind}/${item.metadata.name}`, item] as const);
    }),
  );
  return new Map(lists.flat());
}

export function resourceKey(kind: KindName, name: string): string {
  return `${kind}/${name}`;
}

/** The apiserver is away (stopped, restarting, connection cut) or shedding load: worth another try. */
function isPassing(error: unknown): boolean {
  if (error instanceof KubeTransportError) return true;
  return error instanceof KubeApiError && (error.status >= 500 || error.status === 429);
}

/**
 * Runs a request until the apiserver answers it, retrying while it is unreachable or overloaded — the
 * watch-disruption scenario stops it under the suite's feet. Gives up after `deadlineMs`.
 */
export async function persistently<T>(
  what: string,
  call: () => Promise<T>,
  deadlineMs = 120_000,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    try {
      return await call();
    } catch (error) {
      if (!isPassing(error)) throw error;
      if (Date.now() + delay > deadline) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new Error(`${what}: the apiserver did not answer within ${deadlineMs} ms (${reason})`, {
          cause: error,
        });
      }
    }
    await sleep(delay);
  }
}
