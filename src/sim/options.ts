import type { CapacityOptions } from './capacity.ts';
import type { DeliveryOptions } from './delivery.ts';
import type { FaultPatch } from './faults.ts';
import type { ApiKeyOption } from './keys.ts';

export interface SimulatorOptions {
  /** TCP port; 0 (the default) picks a free one. */
  readonly port?: number;
  /** Interface to listen on; default 127.0.0.1. */
  readonly host?: string;
  /** The API keys the service accepts; each is its own organisation unless it names a shared one. */
  readonly apiKeys: readonly ApiKeyOption[];
  /** Duration of each state-machine step in ms; 0 makes steps instant. Default 1000. */
  readonly transitionMs?: number;
  /**
   * When true, simulated time stands still until `clock.advance` moves it (deterministic tests);
   * by default it flows with the wall clock.
   */
  readonly manualTime?: boolean;
  /** How long a terminated pod or VM stays visible, in ms. Default 5 minutes. */
  readonly retentionMs?: number;
  readonly capacity?: CapacityOptions;
  /** Faults active from the start. */
  readonly faults?: FaultPatch;
  /** Seed of every random fault decision; the same seed makes the same decisions. */
  readonly seed?: number;
  /** Largest request body accepted, in bytes. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /**
   * Token the `/_sim/` admin endpoints require in header `x-sim-admin-token`. Without one they
   * answer only callers on the loopback interface.
   */
  readonly adminToken?: string;
  /** Retries and timeouts of pod callbacks and task webhooks. */
  readonly delivery?: Partial<DeliveryOptions>;
}

export const DEFAULTS = {
  host: '127.0.0.1',
  transitionMs: 1000,
  retentionMs: 5 * 60_000,
  seed: 0x5eed,
  maxBodyBytes: 1024 * 1024,
  delivery: { retries: 3, retryBaseMs: 1000, timeoutMs: 5000 },
} as const;
