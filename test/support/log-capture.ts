import { createLogger, type Logger } from '../../src/lib/logger.ts';

export interface CapturedLogs {
  readonly logger: Logger;
  /** Every line written so far, parsed. */
  readonly lines: Record<string, unknown>[];
  /** The raw text written so far, for "this never appears anywhere" assertions. */
  text(): string;
}

/** A real pino logger (redaction included) writing JSON lines into memory. */
export function captureLogs(level = 'debug'): CapturedLogs {
  const raw: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level,
    destination: {
      write(line: string) {
        raw.push(line);
        lines.push(JSON.parse(line));
      },
    },
  });
  return { logger, lines, text: () => raw.join('') };
}
