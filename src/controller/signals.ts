import type { Logger } from '../lib/logger.ts';

/**
 * An AbortSignal that aborts on the first SIGTERM or SIGINT, for a graceful shutdown. A second
 * signal exits at once with status 1, for an operator who does not want to wait.
 */
export function shutdownSignal(logger: Logger): AbortSignal {
  const shutdown = new AbortController();
  const onSignal = (name: NodeJS.Signals) => {
    if (shutdown.signal.aborted) {
      logger.warn({ signal: name }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    logger.info({ signal: name }, 'signal received: shutting down gracefully');
    shutdown.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return shutdown.signal;
}
