// A validating admission webhook served by the test itself on loopback, registered with the local control
// plane for the objects of one label only, and removed again. It always allows; what it is for is *when*
// it answers: holding a request inside the apiserver, between the registry's read of the object and its
// write to etcd, makes an interleaving of the apiserver's own steps deterministic.
//
// TLS: the webhook serves with the certificate the apiserver self-signed for 127.0.0.1 in its --cert-dir
// (the control plane of the test's own temporary directory), and is trusted through the CA that signed
// it. Node's crypto cannot make an X.509 certificate, and this one is already there.
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { z } from 'zod';
import { isStatus, KubeClient } from '../../src/kube/client.ts';
import { controlPlaneLayout } from '../../src/local/controlplane/layout.ts';
import { readServingCa } from '../../src/local/controlplane/serving-ca.ts';
import type { ControlPlane } from '../../src/local/controlplane.ts';
import { poll } from './until.ts';

const CONFIGURATIONS = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';

const reviewedObject = z
  .looseObject({
    metadata: z.looseObject({
      name: z.string().optional(),
      resourceVersion: z.string().optional(),
      finalizers: z.array(z.string()).optional(),
      annotations: z.record(z.string(), z.string()).optional(),
    }),
  })
  .nullish();

const admissionReview = z.looseObject({
  request: z.looseObject({
    uid: z.string(),
    operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']),
    name: z.string().optional(),
    namespace: z.string().optional(),
    dryRun: z.boolean().optional(),
    object: reviewedObject,
    oldObject: reviewedObject,
  }),
});

export type AdmissionRequest = z.output<typeof admissionReview>['request'];

export interface AdmissionRule {
  apiGroups: string[];
  apiVersions: string[];
  operations: Array<AdmissionRequest['operation']>;
  resources: string[];
  scope?: 'Namespaced' | 'Cluster' | '*';
}

export interface AdmissionWebhookOptions {
  /** Name of the ValidatingWebhookConfiguration (cluster-scoped). */
  name: string;
  /** Only objects carrying all these labels are sent to the webhook. */
  matchLabels: Record<string, string>;
  /** Only objects in this namespace are sent to the webhook. */
  namespace: string;
  rules: AdmissionRule[];
  /** Called for each request; the request is allowed once it resolves (a rejection answers 500). */
  admit(request: AdmissionRequest): Promise<void>;
}

export interface AdmissionWebhook {
  /** Every request seen so far, in order of arrival. */
  readonly requests: readonly AdmissionRequest[];
  /**
   * Resolves once the apiserver calls the webhook: sends `probe` (a dry-run request the configuration
   * matches) until one arrives, since the apiserver picks a new configuration up asynchronously.
   */
  effective(probe: () => Promise<unknown>): Promise<void>;
  /** Removes the configuration, then stops serving. Idempotent. */
  stop(): Promise<void>;
}

export async function startAdmissionWebhook(
  plane: ControlPlane,
  options: AdmissionWebhookOptions,
): Promise<AdmissionWebhook> {
  const certDir = controlPlaneLayout(plane.dataDir).certDir;
  const [cert, key, ca] = await Promise.all([
    readFile(join(certDir, 'apiserver.crt'), 'utf8'),
    readFile(join(certDir, 'apiserver.key'), 'utf8'),
    readServingCa(certDir),
  ]);
  if (!ca) throw new Error(`no serving CA in ${certDir}`);
  const requests: AdmissionRequest[] = [];
  const server = createServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const { request } = admissionReview.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      requests.push(request);
      options.admit(request).then(
        () => {
          res.setHeader('content-type', 'application/json');
          res.end(
            JSON.stringify({
              apiVersion: 'admission.k8s.io/v1',
              kind: 'AdmissionReview',
              response: { uid: request.uid, allowed: true },
            }),
          );
        },
        (error: unknown) => {
          res.statusCode = 500;
          res.end(String(error));
        },
      );
    });
  });
  await listen(server);
  const port = (server.address() as AddressInfo).port;
  const client = new KubeClient(plane.connection);
  await client.request(z.unknown(), {
    method: 'POST',
    path: CONFIGURATIONS,
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: options.name },
      webhooks: [
        {
          name: `${options.name}.test.gpucloud.io`,
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          timeoutSeconds: 30,
          clientConfig: {
            url: `https://127.0.0.1:${port}/`,
            caBundle: Buffer.from(ca).toString('base64'),
          },
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': options.namespace } },
          objectSelector: { matchLabels: options.matchLabels },
          rules: options.rules.map((rule) => ({ scope: 'Namespaced', ...rule })),
        },
      ],
    },
  });
  let stopped: Promise<void> | undefined;
  return {
    requests,
    effective: async (probe) => {
      const seen = requests.length;
      await poll(
        async () => {
          await probe();
          return requests.slice(seen).some((request) => request.dryRun);
        },
        (called) => called,
        `the apiserver to call webhook ${options.name}`,
        10_000,
      );
    },
    stop: () => {
      stopped ??= (async () => {
        try {
          await client.request(z.unknown(), { method: 'DELETE', path: `${CONFIGURATIONS}/${options.name}` });
        } catch (error) {
          if (!isStatus(error, 404)) throw error;
        } finally {
          server.closeAllConnections();
          await new Promise<void>((resolve) => server.close(() => resolve()));
        }
      })();
      return stopped;
    },
  };
}

function listen(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
}
