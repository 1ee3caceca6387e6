// A request body read within bounds. The apiserver sends every tenant's requests over a few pooled
// connections: a request refused before its body was read must leave its connection clean for the next
// request, whoever's it is, and must get its answer (a connection closed while the apiserver still writes
// the body is a 503 "broken pipe" to the sender). So the rest of a body is read and thrown away, up to a
// bound, before any refusal is answered; beyond that bound the answer closes the connection. Node's
// `requestTimeout` (server.ts) bounds how long a body may take to arrive.
import type { IncomingMessage } from 'node:http';
import { ServingError } from '../serving/status.ts';

export const BODY_LIMIT_BYTES = 1024 * 1024;
/** What is read and thrown away of a body refused, so that its connection can serve again. */
const DISCARD_LIMIT_BYTES = 8 * 1024 * 1024;

/** The body, whole; a 400 when it is larger than `BODY_LIMIT_BYTES` (the rest left for `discardBody`). */
export function readBody(incoming: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = listen(incoming, {
      data: (chunk) => {
        size += chunk.length;
        chunks.push(chunk);
        if (size <= BODY_LIMIT_BYTES) return;
        stop();
        reject(new ServingError(400, `the body is larger than ${BODY_LIMIT_BYTES} bytes`));
      },
      end: () => resolve(Buffer.concat(chunks)),
      failed: () => reject(new ServingError(400, 'the body did not arrive whole')),
    });
  });
}

/**
 * Reads what is left of the body and throws it away: true when it ended, false when it is larger than
 * the bound or did not arrive (its connection must then be closed).
 */
export function discardBody(incoming: IncomingMessage): Promise<boolean> {
  if (incoming.readableEnded) return Promise.resolve(true);
  if (Number(incoming.headers['content-length']) > DISCARD_LIMIT_BYTES) return Promise.resolve(false);
  return new Promise((resolve) => {
    let size = 0;
    const stop = listen(incoming, {
      data: (chunk) => {
        size += chunk.length;
        if (size <= DISCARD_LIMIT_BYTES) return;
        stop();
        resolve(false);
      },
      end: () => resolve(true),
      failed: () => resolve(false),
    });
  });
}

interface BodyListeners {
  readonly data: (chunk: Buffer) => void;
  readonly end: () => void;
  readonly failed: () => void;
}

/** Reads `incoming` into `listeners` until it ends, fails, or the returned function stops (and pauses) it. */
function listen(incoming: IncomingMessage, listeners: BodyListeners): () => void {
  const stop = () => {
    incoming.off('data', listeners.data).off('end', end).off('error', failed).off('aborted', failed);
    incoming.pause();
  };
  const end = () => {
    stop();
    listeners.end();
  };
  const failed = () => {
    stop();
    listeners.failed();
  };
  incoming.on('data', listeners.data).on('end', end).on('error', failed).on('aborted', failed);
  incoming.resume();
  return stop;
}
