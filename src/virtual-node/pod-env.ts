// The container's environment as a kubelet makes it: envFrom first, then env over it; `$(VAR)` in env
// values expanded from what is defined before them; ConfigMap keys and the downward API resolved; Secret
// keys kept as references (the GpuPod's reconciler reads them at create: no Secret value is written
// anywhere). Pure.
import { OPERATOR_ENV_PREFIX } from '../resources/common/schema.ts';
import { expandParts, type Part } from './expansion.ts';
import type { MappedSpec, MappingContext } from './mapping-context.ts';
import type { Container, EnvFromSource, EnvVar, NodePodObject } from './pod-object.ts';
import { quantityValue } from './quantity.ts';

type MappedEnv = NonNullable<MappedSpec['environmentVars']>[number];
type SecretKeyRef = { readonly name: string; readonly key: string };
/** A variable's value: known text, or a Secret's key (never read here). */
type Value = { readonly text: string } | { readonly secret: SecretKeyRef };

/** What the kubelet says of envFrom keys it skipped. */
export const INVALID_ENV_NAMES = 'InvalidEnvironmentVariableNames';
/** A container waiting for a ConfigMap or Secret, as a kubelet says it. */
export const CREATE_CONTAINER_CONFIG_ERROR = 'CreateContainerConfigError';

export interface Notice {
  readonly reason: string;
  readonly message: string;
}

export interface Environment {
  readonly vars: MappedEnv[];
  /** What `$(NAME)` in the command and args expands to. */
  readonly lookup: (name: string) => Part | undefined;
  /** Said to the Pod's events, as a kubelet says them: the Pod runs all the same. */
  readonly warnings: Notice[];
  /** Set while a ConfigMap or Secret it names is missing. */
  readonly waiting?: Notice | undefined;
}

/** The cloud's limits on a pod's environment, which the GpuPod's schema checks too. */
const MAX_ENV = 128;
const MAX_ENV_VALUE = 32_768;
const MAX_ENV_NAME = 255;
/** The cloud sets it on every pod. */
const RESERVED_ENV = 'POD_ID';
/** A kubelet's valid variable name (IsEnvVarName): an envFrom key that is not one is skipped. */
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const RESOURCE_FIELDS = new Set([
  'limits.cpu',
  'limits.memory',
  'limits.ephemeral-storage',
  'requests.cpu',
  'requests.memory',
  'requests.ephemeral-storage',
]);

export function environmentOf(
  pod: NodePodObject,
  container: Container,
  context: MappingContext,
  problems: string[],
): Environment {
  const vars = new Map<string, Value>();
  const warnings: Notice[] = [];
  let waiting: Notice | undefined;
  const define = (name: string, value: Value, from: string) => {
    if (name === RESERVED_ENV || name.startsWith(OPERATOR_ENV_PREFIX)) {
      problems.push(
        `env ${name}${from} is reserved: the cloud sets POD_ID, the operator names starting ${OPERATOR_ENV_PREFIX}`,
      );
    } else vars.set(name, value);
  };
  for (const source of container.envFrom ?? []) {
    const read = sourceOf(pod, source, context);
    if (read === undefined) continue;
    if ('waiting' in read) {
      waiting ??= read.waiting;
      continue;
    }
    const invalid: string[] = [];
    for (const [key, value] of read.entries) {
      const name = (source.prefix ?? '') + key;
      if (ENV_NAME.test(name)) define(name, value, ` (envFrom ${read.kind} ${read.name})`);
      else invalid.push(name);
    }
    if (invalid.length > 0) {
      warnings.push({
        reason: INVALID_ENV_NAMES,
        message: `Keys [${invalid.sort().join(', ')}] from the EnvFrom ${read.kind} ${pod.metadata.namespace}/${read.name} were skipped since they are considered invalid environment variable names.`,
      });
    }
  }
  for (const each of container.env ?? []) {
    const resolved = resolveEnv(pod, container, each, context, vars);
    if ('problem' in resolved) problems.push(resolved.problem);
    else if ('waiting' in resolved) waiting ??= resolved.waiting;
    else if (resolved.value !== undefined) define(each.name, resolved.value, '');
  }
  const list = [...vars].map(([key, value]): MappedEnv => envOf(key, value));
  limitProblems(list, problems);
  const lookup = (name: string): Part | undefined => {
    const value = vars.get(name);
    if (value === undefined) return undefined;
    return 'text' in value ? { text: value.text } : { hidden: name };
  };
  return { vars: list, lookup, warnings, waiting };
}

const envOf = (key: string, value: Value): MappedEnv =>
  'text' in value ? { key, value: value.text } : { key, valueFrom: { secretKeyRef: { ...value.secret } } };

function limitProblems(list: readonly MappedEnv[], problems: string[]): void {
  if (list.length > MAX_ENV)
    problems.push(`${list.length} environment variables, over the cloud's ${MAX_ENV}`);
  const long = list.filter((each) => (each.value?.length ?? 0) > MAX_ENV_VALUE).map((each) => each.key);
  if (long.length > 0)
    problems.push(`env ${long.join(', ')}: longer than the cloud's ${MAX_ENV_VALUE} characters`);
  const named = list.filter((each) => each.key.length > MAX_ENV_NAME).map((each) => each.key.slice(0, 40));
  if (named.length > 0) {
    problems.push(`env names over the cloud's ${MAX_ENV_NAME} characters: ${named.join('..., ')}...`);
  }
}

type Source =
  | { readonly kind: 'configMap' | 'secret'; readonly name: string; readonly entries: Array<[string, Value]> }
  | { readonly waiting: Notice };

/** The variables one envFrom source gives; undefined when it gives none (optional and missing, not read). */
function sourceOf(pod: NodePodObject, source: EnvFromSource, context: MappingContext): Source | undefined {
  const namespace = pod.metadata.namespace;
  // The apiserver allows exactly one of the two; a kubelet reads configMapRef first.
  if (source.configMapRef) {
    const { name = '', optional } = source.configMapRef;
    if (!context.configMaps) return undefined;
    const data = context.configMaps.get(name);
    if (data) {
      const keys = Object.keys(data).sort();
      return { kind: 'configMap', name, entries: keys.map((key) => [key, { text: data[key] ?? '' }]) };
    }
    return optional ? undefined : missing(`configmap "${name}" not found`);
  }
  if (source.secretRef) {
    const { name = '', optional } = source.secretRef;
    if (!context.secrets) return undefined;
    const facts = context.secrets.get(name);
    if (facts) {
      const keys = [...facts.keys].sort();
      return { kind: 'secret', name, entries: keys.map((key) => [key, { secret: { name, key } }]) };
    }
    return optional ? undefined : missing(`secret "${name}" not found in namespace ${namespace}`);
  }
  return undefined;
}

const missing = (message: string) => ({ waiting: { reason: CREATE_CONTAINER_CONFIG_ERROR, message } });

type Resolved =
  | { readonly value: Value | undefined }
  | { readonly problem: string }
  | { readonly waiting: Notice };

function resolveEnv(
  pod: NodePodObject,
  container: Container,
  each: EnvVar,
  context: MappingContext,
  defined: ReadonlyMap<string, Value>,
): Resolved {
  const key = each.name;
  const from = each.valueFrom;
  // A kubelet expands a value that is set, and reads valueFrom only for one that is empty.
  if (each.value) return expandedValue(key, each.value, defined);
  if (!from) return { value: { text: '' } };
  if (from.secretKeyRef) {
    // Only that the key exists is read here (the Secret's facts hold no value); the reconciler reads the
    // value for the cloud's create.
    const { name = '', key: secretKey, optional } = from.secretKeyRef;
    const facts = context.secrets?.get(name);
    if (!context.secrets || facts?.keys.includes(secretKey))
      return { value: { secret: { name, key: secretKey } } };
    if (optional) return { value: undefined };
    const message = facts
      ? `couldn't find key ${secretKey} in Secret ${pod.metadata.namespace}/${name}`
      : `secret "${name}" not found`;
    return missing(message);
  }
  if (from.configMapKeyRef) {
    const { name = '', key: mapKey, optional } = from.configMapKeyRef;
    if (!context.configMaps) return { value: undefined };
    const data = context.configMaps.get(name);
    const value = data?.[mapKey];
    if (value !== undefined) return { value: { text: value } };
    if (optional) return { value: undefined };
    const message = data
      ? `couldn't find key ${mapKey} in ConfigMap ${pod.metadata.namespace}/${name}`
      : `configmap "${name}" not found`;
    return missing(message);
  }
  if (from.fieldRef) {
    const value = downwardValue(pod, from.fieldRef.fieldPath, context);
    return value === undefined
      ? { problem: `env ${key}: fieldRef ${from.fieldRef.fieldPath} is not supported` }
      : { value: { text: value } };
  }
  if (from.resourceFieldRef) return resourceValue(container, key, from.resourceFieldRef);
  return { problem: `env ${key}: its valueFrom is not supported` };
}

/**
 * A value with its `$(VAR)` references expanded. A Secret's variable can only be the whole value (the
 * GpuPod then names its key too): written into other text, its value would be written out in clear.
 */
function expandedValue(key: string, value: string, defined: ReadonlyMap<string, Value>): Resolved {
  const parts = expandParts(value, (name) => {
    const found = defined.get(name);
    if (found === undefined) return undefined;
    return 'text' in found ? { text: found.text } : { hidden: name };
  });
  const hidden = parts.flatMap((part) => ('hidden' in part ? [part.hidden] : []));
  if (hidden.length === 0)
    return { value: { text: parts.map((part) => ('text' in part ? part.text : '')).join('') } };
  const [only] = parts;
  const whole =
    parts.length === 1 && only !== undefined && 'hidden' in only ? defined.get(only.hidden) : undefined;
  if (whole) return { value: whole };
  return {
    problem:
      `env ${key}: its value writes $(${hidden.join('), $(')}), a Secret's variable, into other text: the ` +
      `GpuPod would hold the Secret's value in clear; give ${key} the Secret's key itself (valueFrom), or ` +
      'build the text in the command, where the shell reads the variable',
  };
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
  return { value: { text: String(Math.ceil(value / (divisor > 0 ? divisor : 1))) } };
}
