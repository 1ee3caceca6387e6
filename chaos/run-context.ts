import { randomBytes } from 'node:crypto';
import { type ControlPlane, startControlPlane } from '../src/local/controlplane.ts';
import { installCrds } from '../test/support/crds.ts';
import { Cluster } from '../test/support/operator.ts';
import type { Profile } from './profiles.ts';
import { Random } from './random.ts';
import { Transcripts } from './transcripts.ts';

/** What every scenario of one run shares: the control plane, the API key, every operator's output. */
export interface RunContext {
  readonly plane: ControlPlane;
  readonly cluster: Cluster;
  /** Random per run, so that finding it anywhere the operator wrote means the operator leaked it. */
  readonly apiKey: string;
  readonly transcripts: Transcripts;
  readonly profile: Profile;
  readonly random: Random;
  /** Progress lines, to stderr in the CLI and to the test's diagnostics in `npm test`. */
  readonly log: (line: string) => void;
}

export interface StartedRun extends RunContext {
  stop(): Promise<void>;
}

/** Starts a control plane with the CRDs installed. Simulators and operators are per scenario. */
export async function startRun(
  profile: Profile,
  seed: number,
  log: (line: string) => void,
): Promise<StartedRun> {
  const plane = await startControlPlane();
  try {
    await installCrds(plane.kubeConfig);
  } catch (error) {
    await plane.stop();
    throw error;
  }
  return {
    plane,
    cluster: new Cluster(plane),
    apiKey: `chaos-key-${randomBytes(12).toString('hex')}`,
    transcripts: new Transcripts(),
    profile,
    random: new Random(seed),
    log,
    stop: () => plane.stop(),
  };
}
