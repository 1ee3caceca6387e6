import { CloudApiError, RequestValidationError } from '../../api/errors.ts';
import { OWNER_ENV } from '../../managed/core/annotations.ts';
import type { EnvVar, Readiness } from '../../managed/core/external-kind.ts';

/**
 * The cloud's answer, or `undefined` when it says the resource does not exist — or when the id is not
 * a cloud id at all (a hand-written external-id annotation): no resource can have it.
 */
export async function unlessNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof CloudApiError && error.kind === 'notFound') return undefined;
    if (error instanceof RequestValidationError && error.issues.every((i) => i.path === 'params.id')) {
      return undefined;
    }
    throw error;
  }
}

/** Deleting what is already gone is success: delete is idempotent in effect. */
export async function ignoreNotFound(call: Promise<unknown>): Promise<void> {
  await unlessNotFound(call);
}

export function hasMarker(env: readonly EnvVar[] | undefined, marker: EnvVar): boolean {
  return env?.some((item) => item.key === marker.key && item.value === marker.value) ?? false;
}

/** The uid the owner marker in `env` names, if `env` carries one. */
export function markerIn(env: readonly EnvVar[] | undefined): string | undefined {
  return env?.find((item) => item.key === OWNER_ENV)?.value;
}

/**
 * Reads a phase through a kind's table. A phase the table does not know (the cloud may add statuses)
 * is not ready, and says so, instead of failing the reconcile.
 */
export function readinessFrom(phase: string, table: Readonly<Record<string, Readiness>>): Readiness {
  return (
    table[phase] ?? {
      ready: false,
      reason: 'UnknownPhase',
      message: `the cloud reports status ${phase}, which this operator does not know`,
    }
  );
}

/** A string of the fields whose change must wake a reconcile. */
export function fingerprintOf(values: ReadonlyArray<string | number | boolean | null | undefined>): string {
  return JSON.stringify(values);
}
