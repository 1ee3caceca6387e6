import type { Logger } from 'pino';
import type { ObjectKey } from '../../kube/object.ts';
import { keyOf } from './external-kind.ts';

/**
 * Logs one line about a resource. The resource goes on the line itself, not into a child logger: a child
 * serialises its bindings when made, even for a line its level then drops, and a burst of creates logs
 * one line per resource.
 */
export function logResource(
  log: Logger,
  level: 'info' | 'warn',
  mr: { metadata: ObjectKey },
  fields: object,
  message: string,
): void {
  log[level]({ resource: keyOf(mr), ...fields }, message);
}
