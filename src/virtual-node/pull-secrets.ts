// A Pod's imagePullSecrets as the cloud's registry credential. The cloud's pod create (v2) takes no
// registry login, only the id of a credential kept in the cloud (containerRegistryAuthId): the
// `kubernetes.io/dockerconfigjson` (or legacy `dockercfg`) Secret whose login covers the image's registry
// names that id in an annotation. Of the login only its registry hosts are kept. Pure.
import { z } from 'zod';
import { REGISTRY_AUTH_ID_ANNOTATION } from './names.ts';
import type { NodePodObject } from './pod-object.ts';

/** What the mapping knows of a Secret of the Pod's namespace: never a value. */
export interface SecretFacts {
  readonly keys: readonly string[];
  /** The registries it has a login for (`host[/path]`); none for a Secret of another type. */
  readonly registries: readonly string[];
  /** Its REGISTRY_AUTH_ID_ANNOTATION, as written. */
  readonly registryAuthId: string | undefined;
}

const DOCKER_HUB = 'docker.io';
const DOCKER_HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);
const CLOUD_ID = /^[1-9][0-9]{0,17}$/;

/** A docker config's logins, keyed by registry. */
const loginsSchema = z.record(z.string(), z.unknown());
/** The Secret types a kubelet reads logins from: the key holding them, and how they are laid out. */
const LOGIN_TYPES: Readonly<Record<string, { key: string; schema: z.ZodType<Record<string, unknown>> }>> = {
  'kubernetes.io/dockerconfigjson': {
    key: '.dockerconfigjson',
    schema: z.looseObject({ auths: loginsSchema }).transform((config) => config.auths),
  },
  'kubernetes.io/dockercfg': { key: '.dockercfg', schema: loginsSchema },
};

/** The facts of a Secret as read: its values dropped here, only the registry hosts of a login kept. */
export function secretFacts(secret: {
  type?: string | undefined;
  annotations?: Readonly<Record<string, string>> | undefined;
  data?: Readonly<Record<string, string>> | null | undefined;
}): SecretFacts {
  const data = secret.data ?? {};
  const logins = LOGIN_TYPES[secret.type ?? ''];
  const config = logins && data[logins.key];
  return {
    keys: Object.keys(data),
    registries: logins && config ? registriesIn(config, logins.schema) : [],
    registryAuthId: secret.annotations?.[REGISTRY_AUTH_ID_ANNOTATION],
  };
}

/** The registries a base64 docker config has a login for; none when it is not one. */
function registriesIn(encoded: string, schema: z.ZodType<Record<string, unknown>>): string[] {
  try {
    const parsed = schema.safeParse(JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')));
    return parsed.success ? Object.keys(parsed.data) : [];
  } catch {
    return []; // not JSON: no login, as a kubelet that cannot parse it has none
  }
}

/** `image`'s registry host and repository path, as a container runtime reads a reference. */
export function registryOf(image: string): { host: string; path: string } {
  const slash = image.indexOf('/');
  const first = slash === -1 ? '' : image.slice(0, slash);
  if (first.includes('.') || first.includes(':') || first === 'localhost') {
    const host = first.toLowerCase();
    return { host: DOCKER_HUB_ALIASES.has(host) ? DOCKER_HUB : host, path: image.slice(slash + 1) };
  }
  return { host: DOCKER_HUB, path: slash === -1 ? `library/${image}` : image };
}

/**
 * Whether a login entry (`https://host/path`, `host`, `*.host`) covers the image: its host the image's
 * (a `*` one label), its path, if any, a prefix of the image's repository.
 */
export function covers(entry: string, image: { host: string; path: string }): boolean {
  const bare = entry.replace(/^[a-z]+:\/\//i, '').replace(/\/+$/, '');
  const slash = bare.indexOf('/');
  const rawHost = (slash === -1 ? bare : bare.slice(0, slash)).toLowerCase();
  const host = DOCKER_HUB_ALIASES.has(rawHost) ? DOCKER_HUB : rawHost;
  // Docker Hub's legacy key (https://index.docker.io/v1/) names the API version, not a repository.
  const path = slash === -1 || host === DOCKER_HUB ? '' : bare.slice(slash + 1);
  if (!hostMatches(host, image.host)) return false;
  return path === '' || image.path === path || image.path.startsWith(`${path}/`);
}

function hostMatches(pattern: string, host: string): boolean {
  const wanted = pattern.split('.');
  const labels = host.split('.');
  return wanted.length === labels.length && wanted.every((label, i) => label === '*' || label === labels[i]);
}

export type RegistryAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'credential'; readonly id: number }
  | { readonly kind: 'waiting'; readonly message: string };

/**
 * The cloud credential the Pod's image is pulled with: that of the first of its imagePullSecrets with a
 * login for the image's registry, as a kubelet tries them in order. None when no Secret has one (a
 * kubelet pulls without a login then); the container waits while a listed Secret is missing (it may be
 * the one) or the one found names no usable credential. `secrets` undefined: not read (a comparison).
 */
export function registryAuthOf(
  pod: NodePodObject,
  image: string,
  secrets: ReadonlyMap<string, SecretFacts | undefined> | undefined,
): RegistryAuth {
  const names = pullSecretsNamed(pod);
  if (!secrets || names.length === 0) return { kind: 'none' };
  const reference = registryOf(image);
  const missing: string[] = [];
  for (const name of names) {
    const facts = secrets.get(name);
    if (!facts) {
      missing.push(name);
      continue;
    }
    if (!facts.registries.some((entry) => covers(entry, reference))) continue;
    const id = facts.registryAuthId;
    if (id === undefined || !CLOUD_ID.test(id.trim())) {
      return {
        kind: 'waiting',
        message:
          `imagePullSecret "${name}" has the login for ${reference.host}, but the cloud takes a registry ` +
          `credential it keeps, not a login: annotate the Secret ${REGISTRY_AUTH_ID_ANNOTATION}=<the ` +
          `cloud's registry credential id>${id === undefined ? '' : ` (it says "${id}", not an id)`}`,
      };
    }
    return { kind: 'credential', id: Number(id.trim()) };
  }
  if (missing.length === 0) return { kind: 'none' };
  return {
    kind: 'waiting',
    message: `imagePullSecrets: ${missing.map((name) => `secret "${name}" not found`).join(', ')} in namespace ${pod.metadata.namespace}`,
  };
}

/** The Secrets the Pod names for its image pulls, in order (a kubelet skips an empty name). */
export function pullSecretsNamed(pod: NodePodObject): string[] {
  return (pod.spec.imagePullSecrets ?? []).flatMap((each) => (each.name ? [each.name] : []));
}
