import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiCode } from '../../api/codes.ts';
import { UNROUTED } from '../calls.ts';
import { SimError } from '../errors.ts';
import type { RawInput } from '../route.ts';
import { allRoutes } from '../routes/index.ts';
import type { Simulation } from '../simulation.ts';
import { ADMIN_PREFIX, Admin } from './admin.ts';
import { parseJson, readBody } from './body.ts';
import { sendFailure, sendSuccess } from './respond.ts';
import { type Match, Router } from './router.ts';

export interface ServerOptions {
  readonly maxBodyBytes: number;
  readonly adminToken: string | undefined;
}

/**
 * The simulator's HTTP face. Each API call goes: route → count → injected latency and faults →
 * API key → body → operation; every failure, expected or not, is answered with an envelope and
 * nothing a caller sends can bring the server down.
 */
export function createSimServer(sim: Simulation, options: ServerOptions): Server {
  const router = new Router(allRoutes(sim));
  const admin = new Admin(sim, options.adminToken);

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://simulator');
    if (url.pathname === ADMIN_PREFIX || url.pathname.startsWith(`${ADMIN_PREFIX}/`)) {
      return admin.handle(request, response, url.pathname);
    }
    const match = router.match(request.method ?? '', url.pathname);
    if (match.kind !== 'found') {
      sim.calls.record(UNROUTED);
      return refuseUnrouted(response, match, request.method ?? '', url.pathname);
    }
    const { operation } = match.route;
    sim.calls.record(operation.name);
    const latency = sim.ctx.faults.latencyFor(operation.name);
    // Unreferenced: a call left waiting must not keep a stopped simulator's process alive.
    if (latency > 0) await sleep(latency, undefined, { ref: false });
    const fault = sim.ctx.faults.forRequest(operation.name);
    if (fault.kind === 'drop' && !fault.afterEffect) return void request.socket.destroy();
    if (fault.kind === 'error') {
      return sendFailure(response, 500, ApiCode.SystemError, 'internal error (injected fault); retry later');
    }
    if (fault.kind === 'rate-limit') {
      return sendFailure(
        response,
        429,
        ApiCode.SystemError,
        'too many requests; retry after the Retry-After delay',
        {
          'retry-after': String(fault.retryAfterSeconds),
        },
      );
    }
    const caller = sim.keys.resolve(headerValue(request.headers['x-api-key']));
    if (caller === undefined) {
      return sendFailure(
        response,
        401,
        ApiCode.InvalidRequest,
        'missing or unknown API key: send a valid x-api-key header',
      );
    }
    const input: RawInput = {
      params: match.params,
      query: queryOf(url.searchParams),
      body: parseJson(await readBody(request, options.maxBodyBytes)),
    };
    const data = match.route.execute(input, caller);
    if (fault.kind === 'drop') return void request.socket.destroy();
    sendSuccess(response, data);
  }

  return createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (error instanceof SimError)
        return sendFailure(response, error.httpStatus, error.code, error.message);
      console.error('simulator: unexpected error while handling', request.method, request.url, error);
      sendFailure(response, 500, ApiCode.SystemError, `internal simulator error: ${String(error)}`);
    });
  });
}

function refuseUnrouted(
  response: ServerResponse,
  match: Exclude<Match, { kind: 'found' }>,
  method: string,
  path: string,
) {
  if (match.kind === 'wrong-method') {
    return sendFailure(
      response,
      405,
      ApiCode.InvalidRequest,
      `${method} is not allowed on ${path}; use ${match.allowed.join(' or ')}`,
      {
        allow: match.allowed.join(', '),
      },
    );
  }
  return sendFailure(response, 404, ApiCode.InvalidRequest, `no operation at ${method} ${path}`);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Query parameters in wire form: a repeated parameter becomes an array. */
function queryOf(params: URLSearchParams): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    query[key] = values.length === 1 ? (values[0] as string) : values;
  }
  return query;
}
