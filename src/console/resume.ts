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
  const resource = resourceOf(definition);
  const patched = await kube
    .request(pausedSchema, {
      method: 'PATCH',
      path: objectPath(resource, { namespace, name }),
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
      if (isStatus(error, 403)) {
        // Which permission the command needs, then the apiserver's own words (they name the user). Exit 1,
        // as for any other failure of the apiserver.
        const prefix = `${error.method} ${error.path}: HTTP 403 ${error.reason}: `;
        const said = error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
        throw new CommandError(
          `forbidden: resuming ${kind} ${namespace}/${name} needs patch on ${resource.plural} ` +
            `(API group ${resource.group}) in namespace ${namespace}; the apiserver refused it: ${said}`,
          EXIT.cloud,
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
