// What a feature adds to a resource's status report. The report knows this interface and nothing of the
// features: the reconciler gathers the contributors of a turn and hands them to the report, which asks
// each, in order, what it adds.
import type { ConditionInput } from './conditions.ts';
import type { ManagedObject, Readiness } from './external-kind.ts';

/** A Warning event about the resource. */
export interface Warning {
  readonly reason: string;
  readonly message: string;
}

/** One feature's part of a status report; every part is optional. */
export interface StatusContribution {
  /** Status fields the feature owns, written over the kind's own (a key set to undefined is cleared). */
  readonly fields?: Readonly<Record<string, unknown>>;
  /**
   * What befell the object (preempted, failed to start, charged above its cap): Ready says this instead of
   * the cloud's readiness, drift is not reported, and the feature's warnings stand for the cloud's.
   */
  readonly loss?: Readiness;
  /** What holds the resource whatever the cloud says (the operator's pause): Ready says this. */
  readonly hold?: Readiness;
  /** Conditions the feature adds after Ready and Synced. */
  readonly conditions?: readonly ConditionInput[];
  /** Told once the status write has landed: a turn working from a stale copy must not say what it would have written. */
  readonly warnings?: readonly Warning[];
  /** Called once the status write has landed, before the warnings are told (a metric). */
  readonly landed?: () => void;
}

/** What a contributor is told of the report: the resource as the turn holds it, and the cloud object. */
export interface ReportInput<Spec, Cloud> {
  readonly mr: ManagedObject<Spec>;
  readonly cloud: Cloud;
  /** The object's phase, as the kind reads it. */
  readonly phase: string;
  readonly now: number;
}

/** A feature's part of one turn's report. */
export type StatusContributor<Spec, Cloud> = (input: ReportInput<Spec, Cloud>) => StatusContribution;
