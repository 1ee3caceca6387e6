import { z } from 'zod';
import { isStatus } from '../kube/client.ts';
import { objectPath } from '../kube/resource-type.ts';
import { managedKinds, RESUME, resourceOf } from '../resources/kinds.ts';
import { CommandError, EXIT } from './errors.ts';
import type { Printable } from './output.ts';
import { type Connections, kindOf, kubeClient } from './target.ts';

const pausedSchema = z.looseObject({
  status: z
    .looseObject({ pausedBy: z.looseObject({ reason: z.string(), message: z.string() }).optional() })
    .optional(),
});

/**
 * Lifts the operator's pause of a resource (idle, a deadline, a budget): a new value of the
 * `gpucloud.io/resume` annotation, written with the caller's own RBAC (`patch` on the kind). No cloud
 * call and no key: the operator resumes the object on its next reconcile.
 */
export async function resume(reference: string, connections: Connections, now: Date): Promise<Printable> {
  const { kind, name } = kindOf(reference, ['GpuPod']);
  const definition = managedKinds.find((candidate) => candidate.kind === kind);
  if (!definition) throw new Error(`no definition of ${kind}`);
  const namespace = connections.namespace ?? 'default';
  const kube = await kubeClient(connections);
  const token = now.toISOString();
  const patched = await kube
    .request(pausedSchema, {
      method: 'PATCH',
      path: objectPath(resourceOf(definition), { namespace, name }),
      patchType: 'application/merge-patch+json',
      body: { metadata: { annotations: { [RESUME]: token } } },
    })
    .catch((error: unknown) => {
      if (isStatus(error, 404)) {
        throw new CommandError(
          `${kind} ${namespace}/${name} not found: check the name and -n`,
          EXIT.notFound,
        );
      }
      throw error;
    });
  const pausedBy = patched.status?.pausedBy;
  return {
    value: { kind, namespace, name, resume: token, pausedBy: pausedBy ?? null },
    columns: ['resource', 'resume asked', 'paused by', 'why'],
    rows: [
      [
        `${namespace}/${name}`,
        token,
        pausedBy?.reason ?? '-',
        pausedBy?.message ?? 'not paused by the operator',
      ],
    ],
  };
}
