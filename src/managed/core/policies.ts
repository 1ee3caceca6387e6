/**
 * What the operator may do to a resource's cloud object, after Crossplane's management policies (the
 * same names, so a Crossplane user reads them at once). `*` is every action; any other list names the
 * actions allowed besides observing, which the operator always does.
 */
export const MANAGEMENT_POLICIES = ['*', 'Observe', 'Create', 'Update', 'Delete', 'LateInitialize'] as const;
export type ManagementPolicy = (typeof MANAGEMENT_POLICIES)[number];

/** An action a policy list may withhold. */
export type ManagedAction = Exclude<ManagementPolicy, '*' | 'Observe'>;

/** Whether `policies` (absent: `["*"]`) allow `action`. */
export function allows(policies: readonly ManagementPolicy[] | undefined, action: ManagedAction): boolean {
  return policies === undefined || policies.includes('*') || policies.includes(action);
}

/** What a rotated Secret does to an object that cannot take its new value: reported, or the object replaced. */
export const SECRET_ROTATION_POLICIES = ['Report', 'Recreate'] as const;
export type SecretRotationPolicy = (typeof SECRET_ROTATION_POLICIES)[number];

/** What to do with a spot object the cloud took back: leave it down, or replace it. */
export const RECOVERY_POLICIES = ['Never', 'Recreate'] as const;
export type RecoveryPolicy = (typeof RECOVERY_POLICIES)[number];
