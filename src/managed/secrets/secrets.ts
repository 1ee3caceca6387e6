import { ReconcileError } from '../core/errors.ts';
import type { EnvSource, EnvVar } from '../core/external-kind.ts';

export type SecretReader = (namespace: string, name: string) => Promise<Record<string, string> | undefined>;

/**
 * Resolves env items, reading each referenced Secret once. The values go only to the cloud API; the
 * errors name the Secret and key, never a value. A missing Secret is not terminal: the user may create it.
 * `reveal` hears each Secret value handed out, so a cloud error that echoes one can be scrubbed.
 */
export async function resolveEnv(
  namespace: string,
  items: ReadonlyArray<EnvSource> | undefined,
  readSecret: SecretReader,
  reveal: (value: string) => void,
): Promise<EnvVar[]> {
  const secrets = new Map<string, Promise<Record<string, string> | undefined>>();
  const read = (name: string) => {
    let secret = secrets.get(name);
    if (!secret) {
      secret = readSecret(namespace, name);
      secrets.set(name, secret);
    }
    return secret;
  };
  const resolved: EnvVar[] = [];
  for (const item of items ?? []) {
    if (item.value !== undefined || !item.valueFrom) {
      resolved.push({ key: item.key, value: item.value ?? '' });
      continue;
    }
    const { name, key } = item.valueFrom.secretKeyRef;
    const data = await read(name);
    if (!data) {
      throw new ReconcileError(
        'SecretNotFound',
        `env ${item.key}: Secret "${name}" does not exist in namespace "${namespace}"; create it and the resource will be retried`,
        { terminal: false },
      );
    }
    const value = data[key];
    if (value === undefined) {
      throw new ReconcileError(
        'SecretKeyNotFound',
        `env ${item.key}: Secret "${name}" in namespace "${namespace}" has no key "${key}"`,
        { terminal: false },
      );
    }
    reveal(value);
    resolved.push({ key: item.key, value });
  }
  return resolved;
}
