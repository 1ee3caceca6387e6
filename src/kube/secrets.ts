import { z } from 'zod';
import { isStatus, type KubeRequests } from './client.ts';
import { objectPath, secrets } from './resource-type.ts';

const secretSchema = z.looseObject({
  metadata: z.looseObject({
    resourceVersion: z.string(),
    ownerReferences: z
      .array(z.looseObject({ uid: z.string(), controller: z.boolean().optional() }))
      .optional(),
  }),
  data: z.record(z.string(), z.string()).optional(),
});

export type SecretObject = z.output<typeof secretSchema>;

/** A Secret as stored (data base64-encoded), or `undefined` when it does not exist. */
export async function readSecretObject(
  client: KubeRequests,
  namespace: string,
  name: string,
): Promise<SecretObject | undefined> {
  try {
    return await client.request(secretSchema, {
      method: 'GET',
      path: objectPath(secrets, { namespace, name }),
    });
  } catch (error) {
    if (isStatus(error, 404)) return undefined;
    throw error;
  }
}

/** A Secret's data, decoded; `undefined` when the Secret does not exist. One get, never a list or watch. */
export async function readSecret(
  client: KubeRequests,
  namespace: string,
  name: string,
): Promise<Record<string, string> | undefined> {
  const secret = await readSecretObject(client, namespace, name);
  if (!secret) return undefined;
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([key, value]) => [
      key,
      Buffer.from(value, 'base64').toString('utf8'),
    ]),
  );
}
