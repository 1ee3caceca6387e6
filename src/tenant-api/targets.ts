// From the custom resource a request names to the cloud object it holds and the account it uses: a tenant
// names its own resource, never a cloud id, so it can reach nothing its resources do not hold.
import { z } from 'zod';
import { isStatus, type KubeClient } from '../kube/client.ts';
import { objectPath } from '../kube/resource-type.ts';
import type { Account, AccountDirectory } from '../managed/accounts/accounts.ts';
import { accountOf } from '../managed/core/account-ref.ts';
import { ReconcileError } from '../managed/core/errors.ts';
import { GROUP, managedKinds, resourceOf } from '../resources/kinds.ts';
import { ServingError } from '../serving/status.ts';
import type { Subresource } from './group.ts';

export interface CloudTarget {
  /** The cloud id the resource's status records (the operator proved it when it wrote it). */
  readonly id: string;
  readonly account: Account;
  readonly resource: { readonly namespace: string; readonly name: string };
}

const resourceSchema = z.looseObject({
  spec: z.unknown().optional(),
  status: z.looseObject({ id: z.string().optional() }).optional(),
});

export async function resolveTarget(
  kube: KubeClient,
  accounts: AccountDirectory,
  subresource: Subresource,
  namespace: string,
  name: string,
): Promise<CloudTarget> {
  const definition = managedKinds.find((each) => each.kind === subresource.kind);
  if (!definition) throw new Error(`no managed kind ${subresource.kind}`);
  const found = await kube
    .request(resourceSchema, { method: 'GET', path: objectPath(resourceOf(definition), { namespace, name }) })
    .catch((error: unknown) => {
      if (isStatus(error, 404)) {
        throw new ServingError(404, `${definition.plural}.${GROUP} "${name}" not found`);
      }
      throw error;
    });
  const id = found.status?.id;
  if (!id) {
    throw new ServingError(
      400,
      `${definition.kind} ${namespace}/${name} has no cloud object yet (status.id is empty): wait until it is created (kubectl describe ${definition.singular}/${name} -n ${namespace})`,
    );
  }
  try {
    return { id, account: accounts.resolve(accountOf(found.spec), namespace), resource: { namespace, name } };
  } catch (error) {
    if (error instanceof ReconcileError) throw new ServingError(error.terminal ? 400 : 503, error.message, 3);
    throw error;
  }
}
