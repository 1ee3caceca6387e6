import type { Logger } from 'pino';
import { type Result, TerminalError } from '../../controller/controller.ts';
import type { Clock } from '../../lib/clock.ts';
import type { ConditionInput } from '../core/conditions.ts';
import { isConflict, toReconcileError, withoutSecrets } from '../core/errors.ts';
import type { EventSink } from '../core/event-sink.ts';
import type { ManagedObject } from '../core/external-kind.ts';
import { NotLeaderError } from '../core/fence.ts';
import type { KindEvents } from '../core/fleet-metrics.ts';
import { logResource } from '../core/resource-log.ts';
import { statusAsIs, writeStatus } from '../core/status-write.ts';
import type { ManagedWriter } from '../core/writer.ts';
import type { TerminalFailures } from './terminal-failures.ts';

export interface FailureReportOptions {
  writer: ManagedWriter;
  events: EventSink;
  fleet: Pick<KindEvents, 'refused'>;
  clock: Clock;
  log: Logger;
}

/**
 * Reports a failed reconcile: a Warning event and Synced=False with the failure's reason, its message
 * scrubbed of the Secret values the reconcile revealed; a terminal one is remembered and not retried
 * until the resource changes.
 */
export class FailureReport {
  readonly #o: FailureReportOptions;
  readonly #refused: TerminalFailures;

  constructor(options: FailureReportOptions, refused: TerminalFailures) {
    this.#o = options;
    this.#refused = refused;
  }

  /**
   * Answers what the work queue should do, or throws the failure for it to back off or give up on. A turn
   * whose signal aborted (a lost lease, a shutdown) reports nothing: the process is stepping down.
   */
  async report(
    mr: ManagedObject<unknown>,
    error: unknown,
    revealed: ReadonlySet<string>,
    signal?: AbortSignal,
  ): Promise<Result> {
    if (signal?.aborted) {
      logResource(
        this.#o.log,
        'info',
        mr,
        {},
        'reconcile aborted: the operator is stopping or no longer leads',
      );
      return {};
    }
    // Someone wrote the resource since it was read: look again with the newer copy.
    if (isConflict(error)) return { requeue: true };
    // A deposed leader leaves the resource to its successor: no status, no event, no retry.
    if (error instanceof NotLeaderError) {
      logResource(this.#o.log, 'warn', mr, {}, error.message);
      return {};
    }
    const failure = withoutSecrets(toReconcileError(error), revealed);
    // A warning when it starts; a resource that keeps waiting for the same thing (room, an offer, a budget)
    // says it again at info level: a thousand waiting resources are not a thousand new warnings. Every
    // failed reconcile still gets its line, which the chaos suite reads to judge how retries are paced.
    const before = mr.status?.conditions?.find((condition) => condition.type === 'Synced');
    const again = before?.reason === failure.reason && before.message === failure.message;
    logResource(
      this.#o.log,
      again ? 'info' : 'warn',
      mr,
      { reason: failure.reason, terminal: failure.terminal, err: failure.cause ?? failure },
      failure.message,
    );
    // A Warning when the failure changes; its repeats are the condition's, not new events.
    if (!again) this.#o.events.event(mr, 'Warning', failure.reason, failure.message);
    const synced: ConditionInput = {
      type: 'Synced',
      status: 'False',
      reason: failure.reason,
      message: failure.message,
    };
    const current = mr.status;
    await writeStatus(this.#o, mr, statusAsIs(current), [synced]).catch((writeError: unknown) => {
      logResource(this.#o.log, 'warn', mr, { err: writeError }, 'could not record the failure in status');
    });
    if (!failure.terminal && failure.retryAfterMs !== undefined)
      return { requeueAfterMs: failure.retryAfterMs };
    if (!failure.terminal) throw failure;
    this.#o.fleet.refused(failure.reason);
    this.#refused.record(mr);
    throw new TerminalError(failure.message, { cause: failure });
  }
}
