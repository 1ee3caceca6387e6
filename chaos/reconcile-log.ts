import type { LogLine } from './transcripts.ts';

/** One failed reconcile of one resource, as the operator logged it. */
export interface Failure {
  readonly time: number;
  readonly reason: string;
  readonly terminal: boolean;
}

/**
 * Failed reconciles per resource (`Kind namespace/name`), oldest first. The generic reconciler writes
 * one warn line per failure, with the resource, its kind, the Synced reason and whether it is terminal.
 */
export function failuresByResource(lines: readonly LogLine[]): Map<string, Failure[]> {
  const failures = new Map<string, Failure[]>();
  for (const line of lines) {
    const { resource, kind, reason, terminal } = line.fields;
    if (typeof resource !== 'string' || typeof reason !== 'string' || typeof terminal !== 'boolean') continue;
    const key = `${String(kind)} ${resource}`;
    failures.set(key, [...(failures.get(key) ?? []), { time: line.time, reason, terminal }]);
  }
  for (const list of failures.values()) list.sort((a, b) => a.time - b.time);
  return failures;
}

export function failuresOf(
  failures: ReadonlyMap<string, readonly Failure[]>,
  kind: string,
  namespace: string,
  name: string,
): readonly Failure[] {
  return failures.get(`${kind} ${namespace}/${name}`) ?? [];
}

/** How many log lines say `message` (a substring of `msg`). */
export function countMessages(lines: readonly LogLine[], message: string): number {
  return lines.filter((line) => line.msg.includes(message)).length;
}
