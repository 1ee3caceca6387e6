import { z } from 'zod';
import { httpsGet } from './https-get.ts';
import type { Probe } from './readiness.ts';
import { readServingCa } from './serving-ca.ts';

const PROBE_TIMEOUT_MS = 2000;

const EtcdHealth = z.object({ health: z.literal('true') });

export function etcdHealthy(clientUrl: string): Probe {
  return async () => {
    const response = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    const body = await response.text();
    const healthy = response.ok && EtcdHealth.safeParse(JSON.parse(body)).success;
    return healthy || `GET /health answered ${response.status}: ${body}`;
  };
}

/** Ready means /readyz passes over TLS verified against the apiserver's own CA, as the admin. */
export function apiserverReady(server: string, certDir: string, adminToken: string): Probe {
  return async () => {
    const ca = await readServingCa(certDir);
    if (!ca) return `no serving certificate in ${certDir} yet`;
    const { status, body } = await httpsGet(`${server}/readyz`, {
      ca,
      token: adminToken,
      timeoutMs: PROBE_TIMEOUT_MS,
    });
    return status === 200 || `GET /readyz answered ${status}: ${body}`;
  };
}

/**
 * kube-controller-manager's controllers each add a check to /healthz once started, so its verbose answer
 * lists them: ready means every one of `controllers` is listed, and passes.
 */
export function controllersStarted(server: string, certDir: string, controllers: readonly string[]): Probe {
  return async () => {
    const ca = await readServingCa(certDir, 'kube-controller-manager');
    if (!ca) return `no serving certificate in ${certDir} yet`;
    const { status, body } = await httpsGet(`${server}/healthz?verbose`, { ca, timeoutMs: PROBE_TIMEOUT_MS });
    const missing = controllers.filter((name) => !body.includes(`[+]${name} ok`));
    if (status === 200 && missing.length === 0) return true;
    return `GET /healthz answered ${status}${missing.length ? `, not yet started: ${missing.join(', ')}` : ''}: ${body}`;
  };
}
