// Authentication as a kubelet does it with `--client-ca-file`: a request counts only when it carries a
// client certificate signed by the configured client CA (the apiserver's `--kubelet-client-certificate`);
// the user is the certificate's common name, its groups the organisations. Anything else is refused.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { User } from '../../serving/user.ts';

export function authenticateClientCertificate(
  request: IncomingMessage,
): { user: User } | { refused: string } {
  const socket = request.socket as TLSSocket;
  if (!socket.authorized)
    return {
      refused:
        'no client certificate signed by the client CA and no bearer token: the kubelet API answers the apiserver and its callers',
    };
  const subject = socket.getPeerCertificate().subject;
  const name = listOf(subject?.CN)[0];
  if (!name) return { refused: 'the client certificate names no user (no common name)' };
  return { user: { name, groups: listOf(subject?.O), extra: {} } };
}

function listOf(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}
