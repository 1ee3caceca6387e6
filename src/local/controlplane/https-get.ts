import { request } from 'node:https';

export interface HttpsGetOptions {
  /** PEM of the CA that must have signed the server's certificate. */
  ca: string;
  /** Bearer token; none for an anonymous request. */
  token?: string;
  timeoutMs: number;
}

export interface HttpsResponse {
  status: number;
  body: string;
}

/** A GET with certificate verification against `ca` (and a bearer token if given); rejects on network errors. */
export function httpsGet(url: string, options: HttpsGetOptions): Promise<HttpsResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      ca: options.ca,
      headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
