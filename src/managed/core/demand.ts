// What a resource asks of its account: given by each kind's adapter (external-kind.ts) and checked by the
// guardrails (guardrails.ts), both of which import it from here.

/** What a resource asks of its account, checked against the account's policy. */
export interface Demand {
  /** GPU types it may run on, and how many GPUs it holds while live. */
  gpus?: { types: readonly string[]; count: number } | undefined;
  /** Whether the spec asks for the object to be live (not paused or stopped). */
  live: boolean;
  /**
   * US dollars per hour it costs while live, at today's prices (an autoscaled endpoint at its most
   * workers); undefined when the cloud quotes no price for it. Read only when a budget covers it: a
   * price may cost a call (the GPU search), which an account without budgets never pays.
   */
  perHour?(): Promise<number | undefined>;
  containerRegistryAuthId?: string | undefined;
  credentialId?: string | undefined;
}
