import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiCode } from '../../api/codes.ts';
import { UNROUTED } from '../calls.ts';
import { invalid, SimError } from '../errors.ts';
import type { RequestFault } from '../faults.ts';
import type { Caller } from '../keys.ts';
import { allRoutes } from '../routes/index.ts';
import type { RawInput } from '../routes/route.ts';
import type { Simulation } from '../simulation.ts';
import { ADMIN_PREFIX, Admin } from './admin.ts';
import { parseJson, readBody } from './body.ts';
import { sendFailure, sendSuccess } from './respond.ts';
import { type Match, RouteTable } from './route-table.ts';

export interface ServerOptions {
  readonly maxBodyBytes: number;
  readonly adminToken: string | undefined;
}

/**
 * The simulator's HTTP face. Each API call goes: route → count → injected latency and faults →
 * API key → body → operation. Every failure, expected or not, is answered with an envelope, and
 * nothing a caller sends can bring the server down.
 */
export function createSimServer(sim: Simulation, options: ServerOptions): Server {
  const routes = new RouteTable(allRoutes(sim));
  const admin = new Admin(sim, options.adminToken);

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const method = request.method ?? '';
    const url = URL.parse(request.url ?? '/', 'http://simulator');
    if (url === null) throw invalid(`the request target ${JSON.stringify(request.url)} is not a path`);
    if (url.pathname === ADMIN_PREFIX || url.pathname.startsWith(`${ADMIN_PREFIX}/`)) {
      return admin.handle(request, response, url.pathname);
    }
    const match = routes.match(method, url.pathname);
    if (match.kind !== 'found') {
      sim.calls.record(UNROUTED);
      return refuseUnrouted(response, match, method, url.pathname);
    }
    const { operation } = match.route;
    sim.calls.record(operation.name, { method, params: match.params });
    const latency = sim.ctx.faults.latencyFor(operation.name);
    // Unreferenced: a call left waiting must not keep a stopped simulator's process alive.
    if (latency > 0) await sleep(latency, undefined, { ref: false });
    const fault = sim.ctx.faults.forRequest(operation.name);
    if (answeredByFault(fault, request, response)) return;
    const caller = authenticate(sim, request);
    const input: RawInput = {
      params: match.params,
      query: queryOf(url.searchParams),
      body: parseJson(await readBody(request, options.maxBodyBytes)),
    };
    let data: unknown;
    try {
      data = match.route.execute(input, caller);
    } finally {
      // Carried out (or refused), but the caller never hears of it: what is written next is lost.
      if (fault.kind === 'drop') request.socket.destroy();
    }
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

/** Carries out a fault that ends the call before it takes effect; true when it did. */
function answeredByFault(fault: RequestFault, request: IncomingMessage, response: ServerResponse): boolean {
  switch (fault.kind) {
    case 'drop':
      if (fault.afterEffect) return false;
      request.socket.destroy();
      return true;
    case 'error':
      sendFailure(response, 500, ApiCode.SystemError, 'internal error (injected fault); retry later');
      return true;
    case 'rate-limit':
      sendFailure(
        response,
        429,
        ApiCode.SystemError,
        'too many requests; retry after the Retry-After delay',
        {
          'retry-after': String(fault.retryAfterSeconds),
        },
      );
      return true;
    case 'none':
      return false;
  }
}

function authenticate(sim: Simulation, request: IncomingMessage): Caller {
  const header = request.headers['x-api-key'];
  const caller = sim.keys.resolve(Array.isArray(header) ? header[0] : header);
  if (caller === undefined) {
    throw new SimError(
      ApiCode.InvalidRequest,
      'missing or unknown API key: send a valid x-api-key header',
      401,
    );
  }
  return caller;
}

function refuseUnrouted(
  response: ServerResponse,
  match: Exclude<Match, { kind: 'found' }>,
  method: string,
  path: string,
): void {
  if (match.kind === 'no-path') {
    sendFailure(response, 404, ApiCode.InvalidRequest, `no operation at ${method} ${path}`);
    return;
  }
  const allowed = match.allowed.join(', ');
  sendFailure(response, 405, ApiCode.InvalidRequest, `${method} is not allowed on ${path}; use ${allowed}`, {
    allow: allowed,
  });
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
