/**
 * Result codes of the service envelope: those the API spec lists and those docs/design.md §4.2 decides
 * where the spec is silent.
 */
export const ApiCode = {
  Success: 10000,
  InvalidRequest: 10001,
  SystemError: 10002,
  VmNotFound: 11000,
  VmStatusInvalid: 11001,
  NoTerminatePermission: 11002,
  ResourceStatusInvalid: 12001,
  NoCapacity: 12002,
  PodNotFound: 13000,
  EndpointNotFound: 14000,
  ServerlessUnavailable: 24000,
  ServerlessNotFound: 24001,
  TaskNotFound: 24011,
} as const;

export type ApiCode = (typeof ApiCode)[keyof typeof ApiCode];
export type ApiCodeName = keyof typeof ApiCode;

/**
 * What a failure means for whoever decides what to do next:
 * - `transient`: the same request may succeed later (system error, no capacity, overload);
 * - `terminal`: it will keep failing until the request or the key's permissions change;
 * - `notFound`: the resource does not exist (or is not visible to the key's organisation);
 * - `conflict`: the resource is in a state that does not allow the action; re-read it, retry later;
 * - `unknown`: a code this client does not know and the HTTP status does not explain.
 */
export type FailureKind = 'transient' | 'terminal' | 'notFound' | 'conflict' | 'unknown';

const kindOfCode: Readonly<Record<Exclude<ApiCode, typeof ApiCode.Success>, FailureKind>> = {
  [ApiCode.InvalidRequest]: 'terminal',
  [ApiCode.SystemError]: 'transient',
  [ApiCode.VmNotFound]: 'notFound',
  [ApiCode.VmStatusInvalid]: 'conflict',
  [ApiCode.NoTerminatePermission]: 'terminal',
  [ApiCode.ResourceStatusInvalid]: 'conflict',
  [ApiCode.NoCapacity]: 'transient',
  [ApiCode.PodNotFound]: 'notFound',
  [ApiCode.EndpointNotFound]: 'notFound',
  [ApiCode.ServerlessUnavailable]: 'transient',
  [ApiCode.ServerlessNotFound]: 'notFound',
  [ApiCode.TaskNotFound]: 'notFound',
};

const nameOfCode = new Map<number, ApiCodeName>(
  Object.entries(ApiCode).map(([name, code]) => [code, name as ApiCodeName]),
);

/** The symbolic name of a code, e.g. `NoCapacity`, or undefined for a code this client does not know. */
export function apiCodeName(code: number): ApiCodeName | undefined {
  return nameOfCode.get(code);
}

/**
 * Classifies a failed call. A known code decides; otherwise the HTTP status does (the service may
 * answer without an envelope, e.g. 401 for a bad key, or a proxy's 502).
 */
export function failureKind(code: number | null, httpStatus: number): FailureKind {
  const known = code === null ? undefined : kindOfCode[code as keyof typeof kindOfCode];
  if (known !== undefined) return known;
  if (httpStatus === 429 || httpStatus >= 500) return 'transient';
  if (httpStatus >= 400) return 'terminal';
  return 'unknown';
}
