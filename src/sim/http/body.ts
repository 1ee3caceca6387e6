import type { IncomingMessage } from 'node:http';
import { ApiCode } from '../../api/codes.ts';
import { invalid, SimError } from '../errors.ts';

/** How far past the limit a body is still drained (so its sender can read our answer) before we hang up. */
const DRAIN_FACTOR = 16;

/**
 * Reads a request body of at most `limit` bytes. A larger body is drained and discarded, then
 * refused with 413, so the client gets an answer instead of a reset connection; a body far beyond
 * the limit gets the connection closed.
 */
export function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > limit * DRAIN_FACTOR) request.socket.destroy();
    });
    request.on('end', () => {
      if (size <= limit) return resolve(Buffer.concat(chunks));
      reject(
        new SimError(
          ApiCode.InvalidRequest,
          `request body is larger than the ${limit} bytes this service accepts`,
          413,
        ),
      );
    });
    // Whoever hung up gets no answer; the rejection only ends the handling of the call.
    const cut = () => reject(invalid('the request ended before its body did'));
    request.on('error', cut);
    request.on('close', cut);
  });
}

/** The body as JSON; empty means no body at all. */
export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw invalid(`request body is not valid JSON: ${(error as Error).message}`);
  }
}
