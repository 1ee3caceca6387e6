import type { CloudHistory } from './cloud-objects.ts';
import type { Ledger } from './ledger.ts';
import { liveOwned, type Observation, resourceOfTracked } from './observation.ts';
import type { Spec } from './workload.ts';

/** The invariants every scenario must keep; any non-zero count fails the run. */
export interface Findings {
  /**
   * Cloud objects made beyond the first for one resource, over the whole scenario; for a resource whose
   * object may be replaced by design (recoveryPolicy Recreate after a preemption, a placed pod after a
   * failed start), objects live at the same time as another.
   */
  duplicates: number;
  /** Live cloud objects of deleted resources, or of no resource at all. */
  leaks: number;
  /** Deleted resources still in the apiserver, held by a finalizer. */
  stuckFinalizers: number;
  /** One line per finding, naming the resource and the cloud object. */
  notes: string[];
}

/**
 * Checks the simulator's own state against what the suite did: one cloud object per resource ever,
 * none live for a deleted resource, none live without an owner, no deleted resource left behind.
 */
/** Specs whose object the operator replaces by design: only one live at a time is an invariant, not one ever. */
function replaceable(spec: Spec): boolean {
  return spec.recoveryPolicy === 'Recreate' || spec.placement !== undefined;
}

export function audit(ledger: Ledger, observation: Observation, history: CloudHistory): Findings {
  const findings: Findings = { duplicates: 0, leaks: 0, stuckFinalizers: 0, notes: [] };
  const made = history.madePerResource();
  const overlaps = history.overlapsPerResource();
  for (const tracked of ledger.all()) {
    const label = `${tracked.kind}/${tracked.name}`;
    const count = made.get(tracked.uid) ?? 0;
    const overlapping = overlaps.get(tracked.uid) ?? 0;
    if (replaceable(tracked.spec)) {
      if (overlapping > 0) {
        findings.duplicates += overlapping;
        findings.notes.push(`duplicate: ${label} had ${overlapping + 1} cloud objects live at once`);
      }
    } else if (count > 1) {
      findings.duplicates += count - 1;
      findings.notes.push(`duplicate: ${label} had ${count} cloud objects made for it`);
    }
    if (!tracked.deleted) continue;
    const leaked = liveOwned(observation, tracked);
    if (leaked.length > 0) {
      findings.leaks += leaked.length;
      findings.notes.push(`leak: ${label} is deleted, cloud ${leaked.map((o) => o.id).join(', ')} live`);
    }
    if (resourceOfTracked(observation, tracked)) {
      findings.stuckFinalizers += 1;
      findings.notes.push(`stuck finalizer: ${label} was deleted and is still there`);
    }
  }
  for (const object of observation.ownerless.filter((candidate) => candidate.live)) {
    findings.leaks += 1;
    findings.notes.push(`leak: cloud ${object.kind} ${object.id} (${object.name}) belongs to no resource`);
  }
  return findings;
}
