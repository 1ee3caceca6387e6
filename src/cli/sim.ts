import { parseArgs } from 'node:util';
import { startSimulator } from '../sim/index.ts';

const USAGE = `usage: npm run sim -- --api-key <key> [--api-key <key2> ...] [--port <port>] [--host <host>]
                     [--transition-ms <n>] [--retention-ms <n>] [--seed <n>]

Runs the GPU cloud API simulator until SIGINT or SIGTERM. Each API key is its own organisation.
--port 0 (the default) picks a free port; the URL is printed once the simulator listens.`;

class UsageError extends Error {}

function integer(
  value: string | undefined,
  flag: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < min || number > max) {
    throw new UsageError(`--${flag} must be a whole number from ${min} to ${max}, got "${value}"`);
  }
  return number;
}

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'api-key': { type: 'string', multiple: true },
      'transition-ms': { type: 'string' },
      'retention-ms': { type: 'string' },
      seed: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return undefined;
  const apiKeys = values['api-key'] ?? [];
  if (apiKeys.length === 0) throw new UsageError('at least one --api-key is required');
  return {
    apiKeys,
    port: integer(values.port, 'port', 0, 65535),
    host: values.host,
    transitionMs: integer(values['transition-ms'], 'transition-ms', 0),
    retentionMs: integer(values['retention-ms'], 'retention-ms', 0),
    seed: integer(values.seed, 'seed', 0, 2 ** 32 - 1),
  };
}

async function main(): Promise<void> {
  let options: ReturnType<typeof parse>;
  try {
    options = parse(process.argv.slice(2));
  } catch (error) {
    console.error(`sim: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (options === undefined) {
    console.log(USAGE);
    return;
  }
  const simulator = await startSimulator(options);
  console.log(`GPU cloud simulator listening on ${simulator.url}`);
  const shutdown = (signal: NodeJS.Signals) => {
    console.log(`sim: ${signal} received, stopping`);
    simulator.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('sim: error while stopping', error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

await main();
