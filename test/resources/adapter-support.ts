// What the adapter tests share: a real client against the in-process simulator over loopback HTTP (simulated
// time stands still until a test advances it), custom resources as the reconciler hands them to an adapter,
// and an ActContext whose env resolution is the reconciler's own (src/managed/secrets/secrets.ts) over in-memory
// Secrets. Unit tier: nothing here starts an apiserver.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { GpuCloudClient } from '../../src/api/client.ts';
import { OWNER_ENV } from '../../src/managed/core/annotations.ts';
import type { ActContext, ManagedObject, Plan, Step } from '../../src/managed/core/external-kind.ts';
import { resolveEnv } from '../../src/managed/secrets/secrets.ts';
import { LATE_INITIALIZED } from '../../src/resources/common/schema.ts';
import { type RunningSimulator, startSimulator } from '../../src/sim/index.ts';

/** One state-machine step of the simulator. */
export const STEP_MS = 60_000;
export const NAMESPACE = 'team-a';
const KEY = 'adapter-test-key';

export interface Cloud {
  readonly sim: RunningSimulator;
  readonly client: GpuCloudClient;
  /** Moves simulated time on by `steps` state-machine steps, one at a time. */
  step(steps?: number): void;
  /** How many calls of one operation (`pods.create`, ...) reached the simulator so far. */
  callsOf(operation: string): number;
  stop(): Promise<void>;
}

/** A simulator and a client for one test file; `stop` closes both. */
export async function startCloud(): Promise<Cloud> {
  const sim = await startSimulator({ apiKeys: [KEY], transitionMs: STEP_MS, manualTime: true });
  const client = new GpuCloudClient({
    baseUrl: sim.url,
    apiKey: KEY,
    rateLimit: { requestsPerSecond: 10_000, burst: 10_000 },
    retry: { maxRetries: 0 },
  });
  return {
    sim,
    client,
    stop: async () => {
      await client.close();
      await sim.stop();
    },
    step: (steps = 1) => {
      for (let i = 0; i < steps; i++) sim.clock.advance(STEP_MS);
    },
    callsOf: (operation) => sim.calls.snapshot().byOperation[operation] ?? 0,
  };
}

let serial = 0;

/** A custom resource as the reconciler hands it to an adapter: parsed spec, a fresh uid. */
export function resource<Spec>(
  kind: string,
  spec: Spec,
  metadata: Partial<ManagedObject<Spec>['metadata']> = {},
  status?: ManagedObject<Spec>['status'],
): ManagedObject<Spec> {
  serial++;
  return {
    apiVersion: 'gpucloud.io/v1alpha1',
    kind,
    metadata: {
      namespace: NAMESPACE,
      name: `${kind.toLowerCase()}-${serial}`,
      uid: `0b5e7a1c-${String(serial).padStart(4, '0')}-4d2e-9f3a-6c1b2a3d4e5f`,
      generation: 1,
      resourceVersion: '1',
      ...metadata,
    },
    spec,
    ...(status === undefined ? {} : { status }),
  };
}

/** Secrets of `NAMESPACE`, by name, as the reconciler reads them. */
export type Secrets = Record<string, Record<string, string>>;

/** The context the reconciler gives an adapter acting for `mr`: env resolved from `secrets`, its owner marker. */
export function actContext(mr: { metadata: { uid: string } }, secrets: Secrets = {}): ActContext {
  return {
    resolveEnv: (items) =>
      resolveEnv(
        NAMESPACE,
        items,
        async (namespace, name) => (namespace === NAMESPACE ? secrets[name] : undefined),
        () => {},
      ),
    secretsChanged: () => false,
    ownerMarker: { key: OWNER_ENV, value: mr.metadata.uid },
  };
}

/**
 * Replaces `target[method]`, for the rest of test `t`, by a wrapper that records each call's first argument
 * (all arguments when there are several) and then calls through.
 */
export function spy<T extends object, K extends keyof T>(t: TestContext, target: T, method: K): unknown[] {
  const original = target[method];
  const seen: unknown[] = [];
  target[method] = ((...args: unknown[]) => {
    seen.push(structuredClone(args.length > 1 ? args : args[0]));
    return (original as (...args: unknown[]) => unknown).apply(target, args);
  }) as T[K];
  t.after(() => {
    target[method] = original;
  });
  return seen;
}

/** The step of a plan that must act. */
export function stepOf(plan: Plan): Step {
  assert.equal(plan.kind, 'act', `expected a step, got ${JSON.stringify(plan)}`);
  return (plan as Extract<Plan, { kind: 'act' }>).step;
}

/** The spec fields whose schema description says they are late-initialised. */
export function lateInitialisedFields(shape: Record<string, unknown>): string[] {
  return Object.entries(shape)
    .filter(([, field]) => (field as { description?: string }).description?.includes(LATE_INITIALIZED))
    .map(([name]) => name)
    .sort();
}

/** What the reconciler runs a resource with after late initialisation: its fields, else the cloud's, else cleared. */
export function lateInitialised<Spec extends object>(
  mr: ManagedObject<Spec>,
  lateInit: { from(cloud: never, spec: Spec): Partial<Spec>; cleared: Partial<Spec> },
  cloud: unknown,
): ManagedObject<Spec> {
  const filled = Object.fromEntries(
    Object.entries(lateInit.from(cloud as never, mr.spec)).filter(
      ([field, value]) => value !== undefined && (mr.spec as Record<string, unknown>)[field] === undefined,
    ),
  );
  return { ...mr, spec: { ...lateInit.cleared, ...filled, ...mr.spec } };
}

/** `INITIALIZING` as a Ready reason: `Initializing`. */
export function camel(status: string): string {
  return status.charAt(0) + status.slice(1).toLowerCase();
}

/**
 * For each field of `base`, whether changing that field alone changes `fingerprint`: the fields the
 * fingerprint watches.
 */
export function watchedFields<T extends object>(base: T, fingerprint: (object: T) => string): string[] {
  const before = fingerprint(base);
  return Object.keys(base)
    .filter((field) => {
      const value = (base as Record<string, unknown>)[field];
      return fingerprint({ ...base, [field]: changed(value) }) !== before;
    })
    .sort();
}

/** A value of the same kind as `value` that differs from it. */
function changed(value: unknown): unknown {
  if (typeof value === 'string') return `${value}-changed`;
  if (typeof value === 'number') return value + 1;
  if (typeof value === 'boolean') return !value;
  if (value === null || value === undefined) return 'set';
  if (Array.isArray(value)) return [...value, { added: true }];
  return { ...value, added: true };
}

/**
 * Asserts a create request built from `spec`: none of `operatorOnly` (set in the spec under test) reaches
 * it, and every other spec field arrives as it is, but for the `transformed` ones the caller checks.
 */
export function assertRequestCarries(
  request: Record<string, unknown>,
  spec: Record<string, unknown>,
  operatorOnly: readonly string[],
  transformed: readonly string[],
): void {
  for (const field of operatorOnly) {
    assert.ok(field in spec, `the spec under test sets ${field}`);
    assert.equal(field in request, false, `${field} reaches the cloud`);
  }
  for (const [field, value] of Object.entries(spec)) {
    if (operatorOnly.includes(field) || transformed.includes(field)) continue;
    assert.deepEqual(request[field], value, field);
  }
}
