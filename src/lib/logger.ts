import { randomUUID } from 'node:crypto';
import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino';

export type { Logger } from 'pino';

/**
 * Anything that may hold a credential or a Secret's value, at the top level and one or two levels
 * down (pino paths do not recurse). Add a path here rather than trusting call sites to be careful.
 */
const SECRET_FIELDS = [
  'apiKey',
  'api_key',
  'webhookAuthKey',
  'password',
  'token',
  'authorization',
  'Authorization',
  'cookie',
  'x-api-key',
  'X-API-Key',
  'secret',
  'secretValue',
  'stringData',
];

function accessor(field: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(field) ? `.${field}` : `["${field}"]`;
}

export const REDACT_PATHS: readonly string[] = SECRET_FIELDS.flatMap((field) => {
  const step = accessor(field);
  return [step.startsWith('.') ? field : step, `*${step}`, `*.*${step}`];
});

export interface LoggerConfig {
  /** pino level; defaults to `$LOG_LEVEL` or `info`. */
  readonly level?: string;
  /** Logger name, written as `name` on every line. */
  readonly name?: string;
  /** Where lines go; stdout by default. */
  readonly destination?: DestinationStream;
}

/** JSON lines with ISO timestamps, textual levels, and every secret-like field censored. */
export function createLogger(config: LoggerConfig = {}): Logger {
  const options: LoggerOptions = {
    level: config.level ?? process.env.LOG_LEVEL ?? 'info',
    name: config.name,
    redact: { paths: [...REDACT_PATHS], censor: '[REDACTED]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  return config.destination ? pino(options, config.destination) : pino(options);
}

/** Logger for one reconcile: every line carries the controller, the object and a reconcile id. */
export function reconcileLogger(controllerLog: Logger, key: { namespace: string; name: string }): Logger {
  return controllerLog.child({ namespace: key.namespace, name: key.name, reconcileID: randomUUID() });
}
