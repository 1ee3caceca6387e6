// undici's dispatchers and its request call, loaded without the package's index. The index also loads
// fetch, WebSocket, EventSource, the cache stores and the mocks: 3.5–4 MB of the operator's idle RSS
// (measured: 101.4 → 97.7 MB) for code nothing here runs. The paths are undici's layout at the exact version
// package.json pins; test/undici.test.ts fails if an upgrade moves or changes them.
import { createRequire } from 'node:module';
import type * as undici from 'undici';

export type { Dispatcher } from 'undici';
export type Agent = undici.Agent;
export type Pool = undici.Pool;
export type ProxyAgent = undici.ProxyAgent;

const load = createRequire(import.meta.url);

export const Agent: typeof undici.Agent = load('undici/lib/dispatcher/agent.js');
export const Pool: typeof undici.Pool = load('undici/lib/dispatcher/pool.js');
export const buildConnector: typeof undici.buildConnector = load('undici/lib/core/connect.js');
/** Loaded when a proxy is configured, not before: most operators never use one. */
export function proxyAgent(options: undici.ProxyAgent.Options): undici.ProxyAgent {
  const ProxyAgent: typeof undici.ProxyAgent = load('undici/lib/dispatcher/proxy-agent.js');
  return new ProxyAgent(options);
}

type RequestCall = (
  this: undici.Dispatcher,
  options: undici.Dispatcher.RequestOptions,
) => Promise<undici.Dispatcher.ResponseData>;
const requestCall: RequestCall = load('undici/lib/api/api-request.js');

/** `dispatcher.request(options)`, which only undici's index adds to dispatchers. */
export function request(
  dispatcher: undici.Dispatcher,
  options: undici.Dispatcher.RequestOptions,
): Promise<undici.Dispatcher.ResponseData> {
  return requestCall.call(dispatcher, options);
}
