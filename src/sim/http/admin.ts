import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { faultPatchSchema, NO_FAULTS } from '../faults.ts';
import { describeIssues } from '../routes/route.ts';
import type { Simulation } from '../simulation.ts';
import { snapshot } from '../state.ts';
import { parseJson, readBody } from './body.ts';
import { sendJson } from './respond.ts';

/** Prefix of the simulator's own endpoints: outside `/v2` and `/openapi`, never part of the API. */
export const ADMIN_PREFIX = '/_sim';
const ADMIN_BODY_LIMIT = 64 * 1024;
const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

class AdminError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

interface AdminAction<S extends z.ZodType> {
  readonly body: S;
  readonly run: (body: z.output<S>) => unknown;
}

function action<S extends z.ZodType>(body: S, run: (body: z.output<S>) => unknown): AdminAction<z.ZodType> {
  return { body, run: (value) => run(body.parse(value)) };
}

const noBody = z.undefined();

/**
 * The admin surface: fault control, the read-only state, call counts, simulated time, capacity and
 * GPU utilisation.
 * Plain JSON, not the service envelope; a failure answers `{error}`.
 */
export class Admin {
  readonly #actions: ReadonlyMap<string, AdminAction<z.ZodType>>;
  readonly #token: string | undefined;

  constructor(sim: Simulation, token: string | undefined) {
    this.#token = token;
    const applied = (done: boolean, what: string) => {
      if (!done) throw new AdminError(409, what);
      return { ok: true };
    };
    this.#actions = new Map<string, AdminAction<z.ZodType>>([
      ['GET /state', action(noBody, () => snapshot(sim))],
      ['GET /faults', action(noBody, () => sim.ctx.faults.config)],
      ['POST /faults', action(faultPatchSchema, (patch) => sim.setFaults(patch))],
      ['DELETE /faults', action(noBody, () => sim.setFaults(NO_FAULTS))],
      [
        'POST /faults/terminate-permission',
        action(z.strictObject({ apiKey: z.string(), allowed: z.boolean() }), ({ apiKey, allowed }) => {
          sim.keys.setCanTerminate(apiKey, allowed);
          return { ok: true };
        }),
      ],
      [
        'POST /faults/fail-pod',
        action(z.strictObject({ id: z.string(), status: z.enum(['FAILED', 'DEGRADED']) }), ({ id, status }) =>
          applied(sim.failures.failPod(id, status), `pod ${id} does not exist or is not running`),
        ),
      ],
      [
        'POST /faults/preempt',
        action(z.strictObject({ id: z.string() }), ({ id }) =>
          applied(sim.failures.preempt(id), `${id} is not a running spot pod or spot VM`),
        ),
      ],
      ['GET /calls', action(noBody, () => sim.calls.snapshot())],
      ['DELETE /calls', action(noBody, () => sim.calls.reset())],
      [
        'POST /clock/advance',
        action(z.strictObject({ ms: z.number().int().min(0) }), ({ ms }) => {
          sim.advance(ms);
          return { now: sim.ctx.clock.now() };
        }),
      ],
      [
        'PUT /capacity',
        action(
          z.strictObject({
            region: z.string(),
            gpuType: z.string(),
            gpus: z.number().int().min(0),
            spotGpus: z.number().int().min(0).nullable().optional(),
            failStarts: z.boolean().optional(),
          }),
          ({ region, gpuType, gpus, spotGpus, failStarts }) => {
            sim.ctx.capacity.setTotal(region, gpuType, gpus);
            if (spotGpus !== undefined) sim.ctx.capacity.setSpotTotal(region, gpuType, spotGpus ?? undefined);
            if (failStarts !== undefined) sim.ctx.capacity.setStartFailures(region, gpuType, failStarts);
            return sim.ctx.capacity.describe();
          },
        ),
      ],
      [
        'PUT /prices',
        action(
          z.strictObject({
            gpuType: z.string(),
            onDemand: z.number().positive().optional(),
            spot: z.number().positive().nullable().optional(),
          }),
          ({ gpuType, ...change }) => sim.ctx.market.set(gpuType, change),
        ),
      ],
      [
        'PUT /metrics/gpu-utilization',
        action(
          z.strictObject({
            id: z.string(),
            percent: z.number().min(0).max(100),
            gpuIndex: z.number().int().min(0).optional(),
          }),
          ({ id, percent, gpuIndex }) => {
            sim.pods.setGpuUtilization(id, percent, gpuIndex);
            return { ok: true, from: sim.ctx.clock.now() };
          },
        ),
      ],
    ]);
  }

  async handle(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    try {
      this.#authorise(request);
      const key = `${request.method} ${path.slice(ADMIN_PREFIX.length)}`;
      const found = this.#actions.get(key);
      if (found === undefined) throw new AdminError(404, `no admin action ${key}; see src/sim/http/admin.ts`);
      const body = parseJson(await readBody(request, ADMIN_BODY_LIMIT));
      sendJson(response, 200, found.run(body) ?? { ok: true });
    } catch (error) {
      sendJson(response, ...failure(error));
    }
  }

  #authorise(request: IncomingMessage): void {
    if (this.#token === undefined) {
      if (!LOOPBACK.has(request.socket.remoteAddress ?? ''))
        throw new AdminError(403, 'admin endpoints answer loopback callers only');
    } else if (request.headers['x-sim-admin-token'] !== this.#token) {
      throw new AdminError(403, 'missing or wrong x-sim-admin-token');
    }
  }
}

function failure(error: unknown): [number, { error: string }] {
  if (error instanceof AdminError) return [error.status, { error: error.message }];
  if (error instanceof z.ZodError) return [400, { error: describeIssues('body', error.issues) }];
  return [400, { error: error instanceof Error ? error.message : String(error) }];
}
