import type { ServerResponse } from 'node:http';
import { ApiCode } from '../../api/codes.ts';

export function sendSuccess(response: ServerResponse, data: unknown): void {
  sendJson(response, 200, { code: ApiCode.Success, message: 'success', data: data ?? null });
}

export function sendFailure(
  response: ServerResponse,
  httpStatus: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(response, httpStatus, { code, message, data: null }, headers);
}

export function sendJson(
  response: ServerResponse,
  httpStatus: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (response.headersSent || response.destroyed) return;
  const payload = JSON.stringify(body);
  response.writeHead(httpStatus, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    ...headers,
  });
  response.end(payload);
}
