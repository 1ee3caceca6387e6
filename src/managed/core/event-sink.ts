import type { ManagedObject } from './external-kind.ts';

/** Records Kubernetes Events about a resource (the runtime's `EventRecorder` is one). */
export interface EventSink {
  event(obj: ManagedObject<unknown>, type: 'Normal' | 'Warning', reason: string, message: string): void;
  /** Forgets what it keeps of resource `uid` (series folded, rate limits), which is gone. */
  forget(uid: string): void;
}
