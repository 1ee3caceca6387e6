// What the virtual node refuses, as a kubelet's admission does: the Pod fails at once with a reason and a
// message, and nothing of it reaches the cloud. Pure.
import type { ObjectMeta } from '../kube/object.ts';

/** What admission reads of a Pod. */
export interface NodePod {
  readonly metadata: ObjectMeta;
  readonly spec: { readonly nodeName?: string | undefined };
  readonly status?: { readonly phase?: string | undefined } | undefined;
}

/** The Pod status a refusal writes (pods/status): a kubelet's words for a Pod it will not run. */
export interface Refusal {
  readonly phase: 'Failed';
  readonly reason: string;
  readonly message: string;
}

export const NAMESPACE_NOT_ALLOWED = 'NamespaceNotAllowed';

/**
 * The refusal of `pod` on node `node` of ProviderConfig `config`, or undefined when there is none to write:
 * its namespace is allowed, or the node is past admitting it (started, finished, or going), as a kubelet
 * judges a Pod only before it starts it.
 */
export function refusalOf(
  pod: NodePod,
  node: string,
  config: string,
  namespaceAllowed: boolean,
): Refusal | undefined {
  const phase = pod.status?.phase ?? 'Pending';
  if (namespaceAllowed || pod.metadata.deletionTimestamp || phase !== 'Pending') return undefined;
  return {
    phase: 'Failed',
    reason: NAMESPACE_NOT_ALLOWED,
    message:
      `Pod was rejected: namespace ${pod.metadata.namespace} may not run Pods on node ${node}: ` +
      `ProviderConfig ${config} does not list it in spec.namespaces`,
  };
}
