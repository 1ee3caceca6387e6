// A request body read within bounds. The apiserver sends every tenant's requests over a few pooled
// connections: a body refused half-read must leave its connection clean for the next request, whoever's it
// is. So the rest of a body too large is read and thrown away (up to a bound) before the answer; beyond
// that bound the body is left unread and the answer closes the connection (server.ts: any answer to a
// request not wholly read does). Node's `requestTimeout` (server.ts) bounds how long a body may take.
import type { IncomingMessage } from 'node:http';
import { TenantApiError } from './status.ts';

export const BODY_LIMIT_BYTES = 1024 * 1024;
/** What is read and thrown away of a body too large, so that its connection can serve again. */
const DRAIN_LIMIT_BYTES = 8 * 1024 * 1024;

/** The body, whole; a 400 when it is larger than `BODY_LIMIT_BYTES`. */
export function readBody(incoming: IncomingMessage): Promise<Buffer> {
  const tooLarge = () => new TenantApiError(400, `the body is larger than ${BODY_LIMIT_BYTES} bytes`);
  if (Number(incoming.headers['content-length']) > DRAIN_LIMIT_BYTES) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      incoming.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= BODY_LIMIT_BYTES) chunks.push(chunk);
      if (size <= DRAIN_LIMIT_BYTES) return;
      stop();
      incoming.pause();
      reject(tooLarge());
    };
    const onEnd = () => {
      stop();
      if (size > BODY_LIMIT_BYTES) reject(tooLarge());
      else resolve(Buffer.concat(chunks));
    };
    const onError = () => {
      stop();
      reject(new TenantApiError(400, 'the body did not arrive whole'));
    };
    incoming.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onError);
  });
}
