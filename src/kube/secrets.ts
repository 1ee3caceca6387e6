import { z } from 'zod';
import { isStatus, type KubeClient } from './client.ts';
import { objectPath, secrets } from './resource-type.ts';

const secretSchema = z.looseObject({ data: z.record(z.string(), z.string()).optional() });

/** A Secret's data, decoded; `undefined` when the Secret does not exist. One get, never a list or watch. */
export async function readSecret(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<Record<string, string> | undefined> {
  try {
    const secret = await client.request(secretSchema, {
      method: 'GET',
      path: objectPath(secrets, { namespace, name }),
    });
    return Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, value]) => [
        key,
        Buffer.from(value, 'base64').toString('utf8'),
      ]),
    );
  } catch (error) {
    if (isStatus(error, 404)) return undefined;
    throw error;
  }
}
