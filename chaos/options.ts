import { parseArgs } from 'node:util';
import { z } from 'zod';
import { SCENARIO_NAMES, type ScenarioName } from './scenarios/index.ts';

const optionsSchema = z.object({
  seed: z.coerce
    .number()
    .int()
    .min(0)
    .max(2 ** 32 - 1)
    .optional(),
  profile: z.enum(['short', 'full']).default('full'),
  only: z
    .string()
    .optional()
    .transform((list) =>
      list === undefined ? [...SCENARIO_NAMES] : list.split(',').map((name) => name.trim()),
    )
    .pipe(z.array(z.enum(SCENARIO_NAMES)).min(1)),
  out: z.string().default('chaos/results/latest.json'),
});

export type ChaosOptions = z.output<typeof optionsSchema> & { only: ScenarioName[] };

export const USAGE = `usage: npm run chaos -- [--profile short|full] [--seed N] [--only ${SCENARIO_NAMES.join(',')}] [--out file.json]`;

/** Parses the command line; throws an Error whose message names the bad option. */
export function parseOptions(argv: readonly string[]): ChaosOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      seed: { type: 'string' },
      profile: { type: 'string' },
      only: { type: 'string' },
      out: { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  const parsed = optionsSchema.safeParse(values);
  if (!parsed.success) throw new Error(z.prettifyError(parsed.error));
  return parsed.data;
}
