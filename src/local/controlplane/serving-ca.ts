import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g;

/**
 * The CA of the serving certificate that kube-apiserver (or kube-controller-manager, or kube-scheduler)
 * generates in its --cert-dir when given none: `<pair>.crt` holds the serving certificate followed by the
 * CA that signed it. Undefined until the server has written it.
 */
export async function readServingCa(certDir: string, pair = 'apiserver'): Promise<string | undefined> {
  let bundle: string;
  try {
    bundle = await readFile(join(certDir, `${pair}.crt`), 'utf8');
  } catch {
    return undefined;
  }
  return bundle.match(PEM_CERTIFICATE)?.find((pem) => new X509Certificate(pem).ca);
}
