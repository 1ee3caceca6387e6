// The names a virtual node is known by: its own, its labels and its taint. docs/virtual-node.md documents
// each; Pods target the node by them, so they change only with the docs.
import { createHash } from 'node:crypto';

/** On every virtual node of this operator, and what its Node informer selects by. */
export const VIRTUAL_NODE_LABEL = 'gpucloud.io/virtual-node';
/** The account the node places on, when its name fits a label value (63 characters). */
export const PROVIDER_CONFIG_LABEL = 'gpucloud.io/provider-config';
/** The account the node places on, always: the node's way back to its ProviderConfig. */
export const PROVIDER_CONFIG_ANNOTATION = 'gpucloud.io/provider-config';
/** `gpucloud.io/gpu-type.<slug>=true` for each GPU type the node can place. */
export const GPU_TYPE_LABEL_PREFIX = 'gpucloud.io/gpu-type.';
/** `gpucloud.io/region.<slug>=true` for each region the node can place in. */
export const REGION_LABEL_PREFIX = 'gpucloud.io/region.';
/** NoSchedule: only Pods that tolerate it land on the node. */
export const VIRTUAL_NODE_TAINT = 'gpucloud.io/virtual-node';

const NODE_PREFIX = 'gpucloud-';
/** A hostname label value, and so the longest node name kept whole. */
const LABEL_VALUE_MAX = 63;
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * The node of ProviderConfig `config`: `gpucloud-<config>`, or, when that is longer than a label value, its
 * first characters and a hash of the whole name, so that two long names never share a node.
 */
export function nodeNameOf(config: string): string {
  const whole = NODE_PREFIX + config;
  if (whole.length <= LABEL_VALUE_MAX) return whole;
  const hash = createHash('sha256').update(config).digest('hex').slice(0, 10);
  const head = whole.slice(0, LABEL_VALUE_MAX - hash.length - 1).replace(/[-.]+$/, '');
  return `${head}-${hash}`;
}

/**
 * The label key saying the node can place `value` (a GPU type, a region): the prefix and the value with
 * every run of characters a label name cannot hold made one `-` ("NVIDIA GeForce RTX 4090" →
 * `gpucloud.io/gpu-type.NVIDIA-GeForce-RTX-4090`). Undefined when what is left does not make a label name.
 */
export function placeLabel(prefix: string, value: string): string | undefined {
  const slug = value.replace(/[^A-Za-z0-9_.]+/g, '-').replace(/^[-_.]+|[-_.]+$/g, '');
  const name = prefix.slice(prefix.indexOf('/') + 1) + slug;
  if (slug === '' || name.length > LABEL_VALUE_MAX || !LABEL_NAME.test(name)) return undefined;
  return prefix + slug;
}

/** Whether `value` may be a label value as it is. */
export function fitsLabelValue(value: string): boolean {
  return value.length <= LABEL_VALUE_MAX && (value === '' || LABEL_NAME.test(value));
}

/** On a Pod bound to a virtual node: held until its cloud pod is gone, as its kubelet holds it. */
export const POD_FINALIZER = 'gpucloud.io/virtual-node';
/** On a node being deregistered: the operator cordoned it, and uncordons it if it is turned on again. */
export const DRAINING_ANNOTATION = 'gpucloud.io/draining';
/** On the GpuPod made for a Pod: the Pod's uid, so that a Pod of the same name made later tells it apart. */
export const POD_UID_LABEL = 'gpucloud.io/pod-uid';
/** On a Pod: the GPU types its cloud pod may be placed on, in order ("A,B"). */
export const GPU_TYPES_ANNOTATION = 'gpucloud.io/gpu-types';
/** On a dockerconfigjson Secret a Pod pulls with: the cloud's registry credential id its login is kept as. */
export const REGISTRY_AUTH_ID_ANNOTATION = 'gpucloud.io/registry-auth-id';
/** On a virtual node: the port its kubelet API serves on, kept so that every leader serves it there. */
export const KUBELET_PORT_ANNOTATION = 'gpucloud.io/kubelet-port';
