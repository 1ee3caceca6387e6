// Which account a resource names, read from its raw spec: the store, the claims and the failure memory need
// it before any account is resolved, so it lives apart from what an account is and allows.

/** The account a resource names when it names none. */
export const DEFAULT_ACCOUNT = 'default';

/** The account a resource names: `spec.providerConfigRef.name`, else the default. Read before parsing. */
export function accountOf(spec: unknown): string {
  if (typeof spec !== 'object' || spec === null || !('providerConfigRef' in spec)) return DEFAULT_ACCOUNT;
  const ref = spec.providerConfigRef;
  if (typeof ref !== 'object' || ref === null || !('name' in ref)) return DEFAULT_ACCOUNT;
  return typeof ref.name === 'string' && ref.name !== '' ? ref.name : DEFAULT_ACCOUNT;
}
