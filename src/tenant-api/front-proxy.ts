// Authentication as an extension apiserver does it: a request counts only when it carries the front
// proxy's client certificate (signed by the request-header CA, with an allowed common name); the user is
// then the one the apiserver names in its headers. Anything else is anonymous, and refused.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { z } from 'zod';
import type { KubeClient } from '../kube/client.ts';
import type { User } from '../serving/user.ts';

/** Where the apiserver publishes its front-proxy settings, readable with `extension-apiserver-authentication-reader`. */
export const AUTHENTICATION_CONFIG_MAP = {
  namespace: 'kube-system',
  name: 'extension-apiserver-authentication',
};

export interface RequestHeaderSettings {
  /** PEM bundle of the CA that signs the front proxy's client certificate. */
  readonly caPem: string;
  /** Common names the certificate may carry; any, when empty (as Kubernetes reads it). */
  readonly allowedNames: readonly string[];
  readonly usernameHeaders: readonly string[];
  readonly groupHeaders: readonly string[];
  readonly extraHeaderPrefixes: readonly string[];
}

const jsonList = z
  .string()
  .optional()
  .transform((text, context) => {
    if (text === undefined || text === '') return [];
    try {
      return z.array(z.string()).parse(JSON.parse(text));
    } catch {
      context.addIssue({ code: 'custom', message: `not a JSON list of strings: ${text}` });
      return z.NEVER;
    }
  });

const configMap = z.object({
  data: z.object({
    'requestheader-client-ca-file': z.string().optional(),
    'requestheader-allowed-names': jsonList,
    'requestheader-username-headers': jsonList,
    'requestheader-group-headers': jsonList,
    'requestheader-extra-headers-prefix': jsonList,
  }),
});

/** The apiserver's front-proxy settings; throws when it has none (aggregation is not set up). */
export async function readRequestHeaderSettings(kube: KubeClient): Promise<RequestHeaderSettings> {
  const { namespace, name } = AUTHENTICATION_CONFIG_MAP;
  const { data } = await kube.request(configMap, {
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/configmaps/${name}`,
  });
  const caPem = data['requestheader-client-ca-file'];
  if (!caPem) {
    throw new Error(
      `${namespace}/${name} has no requestheader-client-ca-file: the apiserver runs without --requestheader-client-ca-file, so it cannot proxy to an aggregated API`,
    );
  }
  return {
    caPem,
    allowedNames: data['requestheader-allowed-names'],
    usernameHeaders: data['requestheader-username-headers'],
    groupHeaders: data['requestheader-group-headers'],
    extraHeaderPrefixes: data['requestheader-extra-headers-prefix'],
  };
}

/**
 * The user the front proxy vouches for, or why the request is anonymous. The TLS layer has checked the
 * chain against the request-header CA (`socket.authorized`); this checks the name and reads the headers.
 */
export function authenticate(
  request: IncomingMessage,
  settings: RequestHeaderSettings,
): { user: User } | { refused: string } {
  const socket = request.socket as TLSSocket;
  if (!socket.authorized) {
    return {
      refused:
        'no client certificate signed by the request-header CA: send requests through the Kubernetes API',
    };
  }
  const commonName = socket.getPeerCertificate().subject?.CN;
  const names = Array.isArray(commonName) ? commonName : [commonName];
  if (
    settings.allowedNames.length > 0 &&
    !names.some((cn) => cn !== undefined && settings.allowedNames.includes(cn))
  ) {
    return {
      refused: `client certificate ${names.join(',')} is not one of the request-header allowed names`,
    };
  }
  const headers = request.headersDistinct;
  const name = settings.usernameHeaders.map((header) => headers[header.toLowerCase()]?.[0]).find(Boolean);
  if (!name) return { refused: 'the front proxy named no user' };
  const groups = settings.groupHeaders.flatMap((header) => headers[header.toLowerCase()] ?? []);
  const extra: Record<string, string[]> = {};
  for (const [header, values] of Object.entries(headers)) {
    const prefix = settings.extraHeaderPrefixes.find((each) => header.startsWith(each.toLowerCase()));
    if (prefix === undefined || values === undefined) continue;
    const key = decodeURIComponent(header.slice(prefix.length));
    extra[key] = [...(extra[key] ?? []), ...values];
  }
  return { user: { name, groups, extra } };
}
