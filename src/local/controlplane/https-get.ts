import { request } from 'node:https';

export interface HttpsGetOptions {
  /** PEM of the CA that must have signed the server's certificate. */
  ca: string;
  /**
   * A bearer token; none for a path the server lets anyone read (kube-controller-manager's /healthz,
   * kube-scheduler's /readyz).
   */
  token?: string;
  timeoutMs: number;
}

export interface HttpsResponse {
  status: number;
  body: string;
}

/** A GET with certificate verification against `ca` (and a bearer token); rejects on network errors. */
export function httpsGet(url: string, options: HttpsGetOptions): Promise<HttpsResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      ca: options.ca,
      headers: options.token === undefined ? {} : { authorization: `Bearer ${options.token}` },
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
