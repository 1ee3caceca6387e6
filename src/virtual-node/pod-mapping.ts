// A Pod bound to a virtual node as the spec of the one GpuPod that runs it: the container's image, command,
// environment, ports, GPUs and disk. What has no counterpart in a cloud pod is refused, every problem named
// in one message, before anything reaches the cloud. Pure: the controller gathers the ConfigMaps it names.
import type { z } from 'zod';
import { OPERATOR_ENV_PREFIX } from '../resources/common/schema.ts';
import type { GpuPodSpecSchema } from '../resources/gpu-pod/schema.ts';
import { GPU_RESOURCE } from './capacity.ts';
import { GPU_TYPE_LABEL_PREFIX, GPU_TYPES_ANNOTATION, placeLabel } from './names.ts';
import type { Refusal } from './pod-admission.ts';
import type { Container, EnvVar, NodePodObject, PodVolume } from './pod-object.ts';
import { quantityValue } from './quantity.ts';

/** What the controller writes as the GpuPod's spec (the apiserver fills the defaults). */
export type MappedSpec = z.input<typeof GpuPodSpecSchema>;
type MappedEnv = NonNullable<MappedSpec['environmentVars']>[number];

/** The reason of every refusal of a Pod the node cannot run as a cloud pod. */
export const UNSUPPORTED_POD_SPEC = 'UnsupportedPodSpec';
/** A container waiting for a ConfigMap, as a kubelet says it. */
export const CREATE_CONTAINER_CONFIG_ERROR = 'CreateContainerConfigError';

export interface MappingContext {
  /** The node's ProviderConfig: the account the cloud pod is made in. */
  readonly config: string;
  readonly node: { readonly name: string; readonly address: string };
  /** The GPU types the node can place now (its offers the guardrails allow). */
  readonly gpuTypes: readonly string[];
  /**
   * The ConfigMaps of the Pod's namespace it names (`configMapsNamed`), undefined for one not found; when
   * not read at all, their variables are left out (a comparison of the other fields needs no read).
   */
  readonly configMaps?: ReadonlyMap<string, Readonly<Record<string, string>> | undefined>;
}

export type Mapping =
  | { readonly kind: 'mapped'; readonly spec: MappedSpec }
  | { readonly kind: 'refused'; readonly refusal: Refusal }
  /** Not runnable yet (a ConfigMap missing, no GPU type to place on): a kubelet's waiting container. */
  | { readonly kind: 'waiting'; readonly reason: string; readonly message: string };

/** The cloud's limits on a pod create, which the GpuPod's schema checks too. */
const MAX_ENV = 128;
const MAX_ENV_VALUE = 32_768;
const MAX_COMMAND = 8192;
const MAX_IMAGE = 255;
const MAX_PLACEMENT_TYPES = 16;
const MAX_GPUS = 2 ** 30;
const GB = 1e9;
/** The cloud sets it on every pod. */
const RESERVED_ENV = 'POD_ID';
/** A projected volume of these sources only is the service account token's, which every Pod gets. */
const TOKEN_SOURCES = new Set(['serviceAccountToken', 'configMap', 'downwardAPI']);
const RESOURCE_FIELDS = new Set([
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.ephemeral-storage',
]);

/** The ConfigMaps `pod`'s environment names, which the controller reads before mapping it. */
export function configMapsNamed(pod: NodePodObject): string[] {
  const names = pod.spec.containers.flatMap((container) =>
    (container.env ?? []).flatMap((each) => each.valueFrom?.configMapKeyRef?.name ?? []),
  );
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
  const command = commandOf(container, problems);
  const env = environmentOf(pod, container, context, problems);
  const expose = portsOf(container, problems);
  const volume = containerVolumeOf(container, problems);
  if (problems.length > 0) return refused(problems);
  if ('waiting' in env) return { kind: 'waiting', ...env.waiting };
  if (!placement) {
    return {
      kind: 'waiting',
      reason: 'NoGpuTypes',
      message: `node ${context.node.name} can place no GPU type now: kubectl describe node ${context.node.name}`,
    };
  }
  return {
    kind: 'mapped',
    spec: {
      name: pod.metadata.name,
      image: container.image ?? '',
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
  if ((spec.imagePullSecrets ?? []).length > 0) {
    problems.push(
      'imagePullSecrets are not supported yet: use an image the cloud can pull without credentials',
    );
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

/** The command line the cloud pod runs, shell-quoted: the cloud takes one string, run by a shell. */
function commandOf(container: Container, problems: string[]): string | undefined {
  const { command = [], args = [] } = container;
  if (command.length === 0 && args.length > 0) {
    problems.push(
      `container "${container.name}" has args and no command: the cloud runs a whole command line, not ` +
        "arguments to the image's entrypoint: set command too",
    );
    return undefined;
  }
  if (command.length === 0) return undefined;
  const line = [...command, ...args].map(shellQuoted).join(' ');
  if (line.length > MAX_COMMAND) {
    problems.push(`the command line is ${line.length} characters, over the cloud's ${MAX_COMMAND}`);
  }
  return line;
}

function shellQuoted(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

type Environment =
  | { readonly vars: MappedEnv[] }
  | { readonly vars: MappedEnv[]; readonly waiting: { reason: string; message: string } };

/**
 * The environment: values as they are, Secret keys kept as references (the reconciler reads them; no
 * Secret value is written anywhere), ConfigMap keys and the downward API resolved. Later entries of one
 * name win, as in a kubelet.
 */
function environmentOf(
  pod: NodePodObject,
  container: Container,
  context: MappingContext,
  problems: string[],
): Environment {
  if ((container.envFrom ?? []).length > 0) {
    problems.push('envFrom is not supported yet: list each variable under env');
  }
  const vars = new Map<string, MappedEnv>();
  let waiting: { reason: string; message: string } | undefined;
  for (const each of container.env ?? []) {
    if (each.name === RESERVED_ENV || each.name.startsWith(OPERATOR_ENV_PREFIX)) {
      problems.push(
        `env ${each.name} is reserved: the cloud sets POD_ID, the operator names starting ${OPERATOR_ENV_PREFIX}`,
      );
      continue;
    }
    const resolved = resolveEnv(pod, container, each, context);
    if ('problem' in resolved) problems.push(resolved.problem);
    else if ('waiting' in resolved) waiting ??= resolved.waiting;
    else if (resolved.value !== undefined) vars.set(each.name, resolved.value);
  }
  const list = [...vars.values()];
  if (list.length > MAX_ENV)
    problems.push(`${list.length} environment variables, over the cloud's ${MAX_ENV}`);
  const long = list.filter((each) => (each.value?.length ?? 0) > MAX_ENV_VALUE).map((each) => each.key);
  if (long.length > 0)
    problems.push(`env ${long.join(', ')}: longer than the cloud's ${MAX_ENV_VALUE} characters`);
  return waiting ? { vars: list, waiting } : { vars: list };
}

type Resolved =
  | { readonly value: MappedEnv | undefined }
  | { readonly problem: string }
  | { readonly waiting: { reason: string; message: string } };

function resolveEnv(
  pod: NodePodObject,
  container: Container,
  each: EnvVar,
  context: MappingContext,
): Resolved {
  const key = each.name;
  const from = each.valueFrom;
  if (!from) return { value: { key, value: each.value ?? '' } };
  if (from.secretKeyRef) {
    const { name = '', key: secretKey } = from.secretKeyRef;
    return { value: { key, valueFrom: { secretKeyRef: { name, key: secretKey } } } };
  }
  if (from.configMapKeyRef) {
    const { name = '', key: mapKey, optional } = from.configMapKeyRef;
    if (!context.configMaps) return { value: undefined };
    const data = context.configMaps.get(name);
    const value = data?.[mapKey];
    if (value !== undefined) return { value: { key, value } };
    if (optional) return { value: undefined };
    const message = data
      ? `couldn't find key ${mapKey} in ConfigMap ${pod.metadata.namespace}/${name}`
      : `configmap "${name}" not found`;
    return { waiting: { reason: CREATE_CONTAINER_CONFIG_ERROR, message } };
  }
  if (from.fieldRef) {
    const value = downwardValue(pod, from.fieldRef.fieldPath, context);
    return value === undefined
      ? { problem: `env ${key}: fieldRef ${from.fieldRef.fieldPath} is not supported` }
      : { value: { key, value } };
  }
  if (from.resourceFieldRef) return resourceValue(container, key, from.resourceFieldRef);
  return { problem: `env ${key}: its valueFrom is not supported` };
}

const SUBSCRIPT = /^metadata\.(labels|annotations)\['([^']*)'\]$/;

/** A downward API field as a kubelet gives it; undefined for one the node cannot give. */
function downwardValue(pod: NodePodObject, path: string, context: MappingContext): string | undefined {
  const { metadata, spec } = pod;
  const subscript = SUBSCRIPT.exec(path);
  if (subscript) {
    const [, field, name = ''] = subscript;
    return (field === 'labels' ? metadata.labels : metadata.annotations)?.[name] ?? '';
  }
  const fields: Readonly<Record<string, string | undefined>> = {
    'metadata.name': metadata.name,
    'metadata.namespace': metadata.namespace ?? '',
    'metadata.uid': metadata.uid,
    'spec.nodeName': spec.nodeName ?? context.node.name,
    'spec.serviceAccountName': spec.serviceAccountName ?? '',
    'status.hostIP': context.node.address,
  };
  return fields[path];
}

/** A resourceFieldRef as a kubelet resolves it: the quantity over the divisor, rounded up. */
function resourceValue(
  container: Container,
  key: string,
  ref: NonNullable<NonNullable<EnvVar['valueFrom']>['resourceFieldRef']>,
): Resolved {
  if (ref.containerName !== undefined && ref.containerName !== container.name) {
    return {
      problem: `env ${key}: resourceFieldRef names container "${ref.containerName}", not "${container.name}"`,
    };
  }
  if (!RESOURCE_FIELDS.has(ref.resource)) {
    return { problem: `env ${key}: resourceFieldRef ${ref.resource} is not supported` };
  }
  const [list, resource = ''] = ref.resource.split(/\.(.*)/s) as ['limits' | 'requests', string];
  const amount = container.resources?.[list]?.[resource];
  // A kubelet takes the node's allocatable for a limit not set: a cloud pod's is not known before it runs.
  if (amount === undefined && list === 'limits') {
    return { problem: `env ${key}: resourceFieldRef ${ref.resource} needs resources.limits.${resource} set` };
  }
  const value = quantityValue(amount ?? 0) ?? 0;
  const divisor = quantityValue(ref.divisor ?? 1) ?? 1;
  return { value: { key, value: String(Math.ceil(value / (divisor > 0 ? divisor : 1))) } };
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
