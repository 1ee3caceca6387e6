#!/usr/bin/env node
import { LeadershipLostError } from '../controller/manager.ts';
import { createLogger } from '../lib/logger.ts';
import { ConfigError, FLAGS, loadConfig } from '../operator/config.ts';
import { runOperator } from '../operator/operator.ts';

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  const lines = Object.values(FLAGS).map(({ flag, env }) => `  --${flag.padEnd(20)} env ${env}`);
  console.log(
    `usage: gpucloud-operator [flags]\n\nEvery flag can also be set by the environment variable beside it:\n${lines.join('\n')}\n\nThe API key comes from --api-key-file or GPUCLOUD_API_KEY.`,
  );
  process.exit(0);
}

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig(args, process.env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`gpucloud-operator: ${error.message}`);
  process.exit(2);
}

const logger = createLogger({ level: config.logLevel, name: 'gpucloud-operator' });
const shutdown = new AbortController();
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    logger.info({ signal }, 'shutting down');
    shutdown.abort();
  });
}
process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled rejection'));

try {
  await runOperator(config, logger, shutdown.signal);
  process.exit(0);
} catch (error) {
  const lost = error instanceof LeadershipLostError;
  logger.fatal(
    { err: error },
    lost ? 'leadership lost; exiting so a fresh process can compete again' : 'operator failed',
  );
  process.exit(1);
}
