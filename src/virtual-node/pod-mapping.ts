// A Pod bound to a virtual node as the spec of the one GpuPod that runs it: the container's image, command,
// environment, ports, GPUs, disk and registry credential. What has no counterpart in a cloud pod is
// refused, every problem named in one message, before anything reaches the cloud. Pure: the controller
// gathers the ConfigMaps and Secrets it names.
import { GPU_RESOURCE } from './capacity.ts';
import { expandParts, type Part } from './expansion.ts';
import type { MappedSpec, MappingContext } from './mapping-context.ts';
import { GPU_TYPE_LABEL_PREFIX, GPU_TYPES_ANNOTATION, placeLabel } from './names.ts';
import type { Refusal } from './pod-admission.ts';
import { CREATE_CONTAINER_CONFIG_ERROR, environmentOf, type Notice } from './pod-env.ts';
import type { Container, NodePodObject, PodVolume } from './pod-object.ts';
import { pullSecretsNamed, registryAuthOf } from './pull-secrets.ts';
import { quantityValue } from './quantity.ts';

/** The reason of every refusal of a Pod the node cannot run as a cloud pod. */
export const UNSUPPORTED_POD_SPEC = 'UnsupportedPodSpec';

export type Mapping =
  /** `warnings`: what a kubelet tells in the Pod's events (envFrom keys skipped); the Pod runs. */
  | { readonly kind: 'mapped'; readonly spec: MappedSpec; readonly warnings: readonly Notice[] }
  | { readonly kind: 'refused'; readonly refusal: Refusal }
  /** Not runnable yet (a ConfigMap or Secret missing, no GPU type to place on): a kubelet's waiting container. */
  | { readonly kind: 'waiting'; readonly reason: string; readonly message: string };

/** The cloud's limits on a pod create, which the GpuPod's schema checks too. */
const MAX_COMMAND = 8192;
const MAX_IMAGE = 255;
const MAX_PLACEMENT_TYPES = 16;
const MAX_GPUS = 2 ** 30;
const GB = 1e9;
/** A projected volume of these sources only is the service account token's, which every Pod gets. */
const TOKEN_SOURCES = new Set(['serviceAccountToken', 'configMap', 'downwardAPI']);
/** A variable the shell of the cloud pod can read: a Secret's, in the command line. */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The ConfigMaps `pod`'s environment names, which the controller reads before mapping it. */
export function configMapsNamed(pod: NodePodObject): string[] {
  const names = pod.spec.containers.flatMap((container) => [
    ...(container.env ?? []).flatMap((each) => each.valueFrom?.configMapKeyRef?.name ?? []),
    ...(container.envFrom ?? []).flatMap((each) => each.configMapRef?.name ?? []),
  ]);
  return [...new Set(names)].sort();
}

/**
 * The Secrets whose keys (envFrom, and env's secretKeyRef: whether the key is there) or registry logins
 * (imagePullSecrets) the mapping needs, which the controller reads before mapping it, in the Pod's
 * namespace only. The value of an env Secret key is read by the GpuPod's reconciler, for the create.
 */
export function secretsNamed(pod: NodePodObject): string[] {
  const names = [
    ...pod.spec.containers.flatMap((container) => [
      ...(container.envFrom ?? []).flatMap((each) => each.secretRef?.name ?? []),
      ...(container.env ?? []).flatMap((each) => each.valueFrom?.secretKeyRef?.name ?? []),
    ]),
    ...pullSecretsNamed(pod),
  ];
  return [...new Set(names)].sort();
}

export function mapPod(pod: NodePodObject, context: MappingContext): Mapping {
  const problems = podProblems(pod);
  const [container] = pod.spec.containers;
  if (!container) return refused(problems);
  const image = imageProblem(container);
  if (image) problems.push(image);
  const gpus = gpuCountOf(container, problems);
  const placement = placementOf(pod, context.gpuTypes, problems);
  const env = environmentOf(pod, container, context, problems);
  const command = commandOf(container, env.lookup, problems);
  const expose = portsOf(container, problems);
  const volume = containerVolumeOf(container, problems);
  const registry = registryAuthOf(pod, container.image ?? '', context.secrets);
  if (problems.length > 0) return refused(problems);
  if (env.waiting) return { kind: 'waiting', ...env.waiting };
  if (registry.kind === 'waiting') {
    return { kind: 'waiting', reason: CREATE_CONTAINER_CONFIG_ERROR, message: registry.message };
  }
  if (!placement) {
    return {
      kind: 'waiting',
      reason: 'NoGpuTypes',
      message: `node ${context.node.name} can place no GPU type now: kubectl describe node ${context.node.name}`,
    };
  }
  return {
    kind: 'mapped',
    warnings: env.warnings,
    spec: {
      name: pod.metadata.name,
      image: container.image ?? '',
      ...(registry.kind === 'credential'
        ? { imagePublicType: 'PRIVATE', containerRegistryAuthId: registry.id }
        : {}),
      gpuCount: gpus ?? 1,
      ...placement,
      // Said, so that late initialisation has nothing to fill: one write fewer per Pod.
      paused: false,
      // Said, so that no edit of the GpuPod can leave its cloud pod behind (Orphan).
      deletionPolicy: 'Delete',
      ...(command === undefined ? {} : { initializationCommand: command }),
      ...(env.vars.length > 0 ? { environmentVars: env.vars } : {}),
      ...(expose.length > 0 ? { expose } : {}),
      ...(volume === undefined ? {} : { containerVolumeInGb: volume }),
      providerConfigRef: { name: context.config },
    },
  };
}

function refused(problems: readonly string[]): Mapping {
  return {
    kind: 'refused',
    refusal: {
      phase: 'Failed',
      reason: UNSUPPORTED_POD_SPEC,
      message: `Pod was rejected: ${problems.join('; ')}`,
    },
  };
}

/** What of the Pod as a whole has no counterpart in one cloud pod. */
function podProblems(pod: NodePodObject): string[] {
  const { spec } = pod;
  const problems: string[] = [];
  if (spec.containers.length !== 1) {
    const names = spec.containers.map((c) => c.name).join(', ');
    problems.push(
      `a gpucloud node runs one container per Pod; this Pod has ${spec.containers.length} (${names})`,
    );
  }
  if ((spec.initContainers ?? []).length > 0) problems.push('init containers are not supported');
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
    if (spec[field]) problems.push(`${field} is not supported: the Pod runs in the GPU cloud`);
  }
  for (const volume of spec.volumes ?? []) {
    const kind = unsupportedVolume(volume);
    if (kind) problems.push(`volume "${volume.name}" (${kind}) is not supported: only emptyDir is`);
  }
  for (const container of spec.containers) {
    if (container.securityContext?.privileged) {
      problems.push(`container "${container.name}" is privileged: not supported`);
    }
  }
  return problems;
}

/** The kind of `volume` when the node cannot give it to a cloud pod; undefined when it can (or ignores it). */
function unsupportedVolume(volume: PodVolume): string | undefined {
  if (volume.emptyDir) return undefined;
  // The service account token every Pod gets: the cloud pod has no use for it, and is not given it.
  const sources = volume.projected?.sources ?? undefined;
  if (sources?.every((source) => Object.keys(source).every((key) => TOKEN_SOURCES.has(key))))
    return undefined;
  return Object.keys(volume).find((key) => key !== 'name') ?? 'no source';
}

function gpuCountOf(container: Container, problems: string[]): number | undefined {
  const limit = container.resources?.limits?.[GPU_RESOURCE];
  if (limit === undefined) {
    problems.push(
      `container "${container.name}" asks for no GPU: set resources.limits["${GPU_RESOURCE}"] (a power of 2)`,
    );
    return undefined;
  }
  const count = quantityValue(limit);
  const powerOfTwo = count !== undefined && Number.isInteger(count) && count >= 1 && count <= MAX_GPUS;
  if (!powerOfTwo || (count & (count - 1)) !== 0) {
    problems.push(`${GPU_RESOURCE} must be a power of 2 (1, 2, 4, 8, ...), not ${String(limit)}`);
    return undefined;
  }
  return count;
}

type Placement = Pick<MappedSpec, 'placement' | 'minSingleCardVramInGb'>;

/**
 * Where the cloud pod may be placed: the Pod's own list (annotation, in its order), else the types its node
 * selector names, else every type the node can place; the cheapest offer first but for the Pod's list.
 */
function placementOf(
  pod: NodePodObject,
  nodeTypes: readonly string[],
  problems: string[],
): Placement | undefined {
  const listed = pod.metadata.annotations?.[GPU_TYPES_ANNOTATION];
  if (listed !== undefined) {
    const types = [...new Set(listed.split(',').map((type) => type.trim()))].filter((type) => type !== '');
    const unknown = types.filter((type) => !nodeTypes.includes(type));
    if (types.length === 0 || types.length > MAX_PLACEMENT_TYPES) {
      problems.push(`annotation ${GPU_TYPES_ANNOTATION} must list 1 to ${MAX_PLACEMENT_TYPES} GPU types`);
    } else if (unknown.length > 0) {
      problems.push(
        `annotation ${GPU_TYPES_ANNOTATION} names ${quotedList(unknown)}, ${cannotPlace(nodeTypes)}`,
      );
    }
    return { placement: { gpuTypes: types, order: 'Listed' } };
  }
  const selected = Object.entries(pod.spec.nodeSelector ?? {}).filter(
    ([key, value]) => key.startsWith(GPU_TYPE_LABEL_PREFIX) && value === 'true',
  );
  if (selected.length > 0) {
    const types = selected.map(([key]) =>
      nodeTypes.find((type) => placeLabel(GPU_TYPE_LABEL_PREFIX, type) === key),
    );
    const unknown = selected.filter((_, index) => types[index] === undefined).map(([key]) => key);
    if (unknown.length > 0) problems.push(`node selector ${quotedList(unknown)}: ${cannotPlace(nodeTypes)}`);
    return { placement: { gpuTypes: types.filter((type) => type !== undefined) } };
  }
  if (nodeTypes.length === 0) return undefined;
  if (nodeTypes.length <= MAX_PLACEMENT_TYPES) return { placement: { gpuTypes: [...nodeTypes] } };
  // More types than a placement lists: any model, which the account's guardrails still narrow.
  return { placement: {}, minSingleCardVramInGb: 1 };
}

const quotedList = (items: readonly string[]) => items.map((item) => `"${item}"`).join(', ');
const cannotPlace = (nodeTypes: readonly string[]) =>
  `which the node cannot place (it places ${nodeTypes.length > 0 ? quotedList(nodeTypes) : 'none now'})`;

/**
 * The command line the cloud pod runs, shell-quoted: the cloud takes one string, run by a shell. `$(VAR)`
 * is expanded from the final environment as a kubelet does; a Secret's variable is left for the shell to
 * read from the environment (`"${VAR}"`), so that its value is never written in the GpuPod.
 */
function commandOf(
  container: Container,
  lookup: (name: string) => Part | undefined,
  problems: string[],
): string | undefined {
  const { command = [], args = [] } = container;
  if (command.length === 0 && args.length > 0) {
    problems.push(
      `container "${container.name}" has args and no command: the cloud runs a whole command line, not ` +
        "arguments to the image's entrypoint: set command too",
    );
    return undefined;
  }
  if (command.length === 0) return undefined;
  const words = [...command, ...args].map((word) => expandParts(word, lookup));
  const unreadable = words
    .flat()
    .flatMap((part) => ('hidden' in part && !SHELL_NAME.test(part.hidden) ? [part.hidden] : []));
  if (unreadable.length > 0) {
    problems.push(
      `the command uses $(${[...new Set(unreadable)].join('), $(')}): a Secret's variable is read there by ` +
        "the cloud pod's shell, which cannot name it: give it a name of letters, digits and _",
    );
  }
  const line = words.map(shellWord).join(' ');
  if (line.length > MAX_COMMAND) {
    problems.push(`the command line is ${line.length} characters, over the cloud's ${MAX_COMMAND}`);
  }
  return line;
}

/** One expanded word: its text quoted, each Secret's variable a shell parameter, all one word. */
function shellWord(parts: readonly Part[]): string {
  return parts.map((part) => ('text' in part ? shellQuoted(part.text) : `"\${${part.hidden}}"`)).join('');
}

function shellQuoted(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

function portsOf(container: Container, problems: string[]): Array<{ port: number }> {
  const ports = container.ports ?? [];
  const udp = ports.filter((port) => (port.protocol ?? 'TCP') !== 'TCP').map((port) => port.containerPort);
  if (udp.length > 0) problems.push(`ports ${udp.join(', ')}: only TCP ports can be exposed`);
  return [...new Set(ports.map((port) => port.containerPort))].map((port) => ({ port }));
}

/** The ephemeral-storage limit in whole GB, rounded up: the cloud pod's container volume. */
function containerVolumeOf(container: Container, problems: string[]): number | undefined {
  const limit = container.resources?.limits?.['ephemeral-storage'];
  if (limit === undefined) return undefined;
  const bytes = quantityValue(limit);
  if (bytes === undefined || bytes <= 0) {
    problems.push(`ephemeral-storage limit ${String(limit)} is not a size`);
    return undefined;
  }
  return Math.ceil(bytes / GB);
}

/** The Pod's one container's image, checked against the cloud's limit. */
function imageProblem(container: Container): string | undefined {
  const image = container.image ?? '';
  if (image === '') return `container "${container.name}" has no image`;
  return image.length > MAX_IMAGE ? `the image name is over the cloud's ${MAX_IMAGE} characters` : undefined;
}
