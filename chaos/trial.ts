import {
  type ApiKeyOption,
  type FaultPatch,
  type RunningSimulator,
  startSimulator,
} from '../src/sim/index.ts';
import type { Cluster } from '../test/support/operator.ts';
import { audit, type Findings } from './audit.ts';
import { CloudHistory } from './cloud-objects.ts';
import { awaitConvergence, type Convergence } from './convergence.ts';
import { type DriveStats, deleteResource, drive, type Life, remove } from './driver.ts';
import { readResources } from './kube.ts';
import { Ledger } from './ledger.ts';
import { type Observation, observe } from './observation.ts';
import { Replica } from './operators.ts';
import { worstOf } from './report.ts';
import type { RunContext } from './run-context.ts';
import { SlowResponses } from './slow-responses.ts';
import { type LogLine, parseLogLines } from './transcripts.ts';
import { type KindName, resourceOf } from './workload.ts';

export type ApiCalls = ReturnType<RunningSimulator['calls']['snapshot']>;

export interface Settled {
  /** After the disruption: every resource converged (see `convergenceProblem`). */
  readonly convergence: Convergence;
  /** API calls the simulator had received when everything was converged. */
  readonly callsAtConvergence: ApiCalls;
  /** After deleting everything: every resource gone, with its cloud objects. */
  readonly cleanup: Convergence;
  readonly findings: Findings;
}

export interface TrialOptions {
  /** Names the namespace, the operator replicas and the simulator's seed. */
  readonly label: string;
  /** Operator processes; more than one needs `--leader-elect true` in `flags`. */
  readonly replicas?: number;
  /** Flags after the suite's defaults (a later flag wins). */
  readonly flags?: readonly string[];
  /** The operator's kubeconfig; the watch scenario points it at a proxy. */
  readonly kubeconfigPath?: string;
  readonly faults?: FaultPatch;
  /** Hold every answer of the cloud back this long on its way to the operator (see `SlowResponses`). */
  readonly answerDelayMs?: number;
  /** Keys the simulator accepts besides the run's: other organisations, for ProviderConfig accounts. */
  readonly apiKeys?: readonly ApiKeyOption[];
}

/**
 * What makes the operator fast enough to test in minutes: a list of the cloud every second, a resync
 * every 30 s, a short API timeout (it also bounds how long crash recovery waits before searching the
 * cloud for an interrupted create: twice the timeout).
 */
export const OPERATOR_FLAGS: readonly string[] = [
  '--poll-interval',
  '1',
  '--resync',
  '0.5',
  '--api-timeout',
  '5',
  '--api-rps',
  '100',
  '--concurrency',
  '8',
  '--log-level',
  'info',
];

/** Steps of the simulated state machines, in ms: fast, but slow enough to be seen mid-way. */
const TRANSITION_MS = 50;
/** Terminated pods and VMs stay visible all scenario long, so duplicates can be counted at the end. */
const RETENTION_MS = 3_600_000;
const HISTORY_SAMPLE_MS = 250;

/** The namespace of the trial labelled `label`. */
export function namespaceOf(label: string): string {
  return `chaos-${label}`;
}

/**
 * One scenario's world: its namespace, a fresh simulator, the operator replicas watching only that
 * namespace, the ledger of what the suite did and the history of what the cloud held.
 */
export class Trial {
  readonly namespace: string;
  readonly sim: RunningSimulator;
  readonly ledger = new Ledger();
  readonly history: CloudHistory;
  readonly cluster: Cluster;
  readonly #run: RunContext;
  readonly #relay: SlowResponses | undefined;
  readonly #options: TrialOptions;
  /** The operator processes running now (see `replaceOperators`). */
  #replicas: Replica[];
  /** Every replica the trial ever ran, for crashes, logs and the final stop. */
  readonly #everyReplica: Replica[] = [];

  private constructor(
    run: RunContext,
    namespace: string,
    sim: RunningSimulator,
    relay: SlowResponses | undefined,
    options: TrialOptions,
  ) {
    this.#run = run;
    this.#relay = relay;
    this.cluster = run.cluster;
    this.namespace = namespace;
    this.sim = sim;
    this.history = new CloudHistory(sim, this.ledger);
    this.history.start(HISTORY_SAMPLE_MS);
    this.#options = options;
    this.#replicas = this.#makeReplicas(options.replicas ?? 1, options.flags ?? []);
  }

  /** The operator processes of the trial now. */
  get replicas(): readonly Replica[] {
    return this.#replicas;
  }

  /** Where the operator reaches the cloud: the simulator, or the relay that slows its answers. */
  get apiUrl(): string {
    return this.#relay?.url ?? this.sim.url;
  }

  /**
   * Stops the running operator processes (gracefully) and starts `count` new replicas in their place, with
   * `flags` after the suite's defaults instead of the trial's own: a trial that first kills a lone operator,
   * then fails leaders over.
   */
  async replaceOperators(count: number, flags: readonly string[]): Promise<void> {
    await Promise.all(this.#replicas.map((replica) => replica.stop()));
    this.#replicas = this.#makeReplicas(count, flags);
    await this.startOperators();
  }

  #makeReplicas(count: number, flags: readonly string[]): Replica[] {
    const run = this.#run;
    const { label, kubeconfigPath } = this.#options;
    const first = this.#everyReplica.length;
    const made = Array.from(
      { length: count },
      (_, index) =>
        new Replica({
          name: `${label}-${String.fromCharCode(97 + first + index)}`,
          kubeconfigPath: kubeconfigPath ?? run.plane.kubeconfigPath,
          apiUrl: this.apiUrl,
          apiKey: run.apiKey,
          flags: [...OPERATOR_FLAGS, '--namespace', this.namespace, ...flags],
          transcripts: run.transcripts,
        }),
    );
    this.#everyReplica.push(...made);
    return made;
  }

  static async open(run: RunContext, options: TrialOptions): Promise<Trial> {
    const namespace = namespaceOf(options.label);
    await run.cluster.ensureNamespace(namespace);
    const sim = await startSimulator({
      apiKeys: [run.apiKey, ...(options.apiKeys ?? [])],
      transitionMs: TRANSITION_MS,
      retentionMs: RETENTION_MS,
      seed: run.random.fork(options.label).int(0, 2 ** 31),
      ...(options.faults ? { faults: options.faults } : {}),
    });
    const relay =
      options.answerDelayMs === undefined
        ? undefined
        : await SlowResponses.start(new URL(sim.url), options.answerDelayMs);
    return new Trial(run, namespace, sim, relay, options);
  }

  get replica(): Replica {
    const [first] = this.replicas;
    if (!first) throw new Error('the trial has no operator replica');
    return first;
  }

  /** Operator processes that ended on their own, other than by losing the lease. */
  get crashes(): number {
    return this.#everyReplica.reduce((sum, replica) => sum + replica.crashes, 0);
  }

  /** Every JSON log line of every operator process of this trial. */
  logLines(): LogLine[] {
    return this.#everyReplica.flatMap((replica) => replica.history().flatMap(parseLogLines));
  }

  async startOperators(): Promise<void> {
    await Promise.all(this.replicas.map((replica) => replica.start()));
  }

  drive(lives: readonly Life[]): Promise<DriveStats> {
    return drive(this.#run.cluster, this.namespace, this.ledger, lives);
  }

  observe(): Promise<Observation> {
    return observe(this.#run.cluster, this.namespace, this.sim, this.ledger);
  }

  converge(timeoutMs = this.#run.profile.convergeTimeoutMs): Promise<Convergence> {
    return awaitConvergence(this.ledger, () => this.observe(), timeoutMs);
  }

  /** Deletes every resource still alive and waits until they and their cloud objects are gone. */
  async deleteEverything(): Promise<Convergence> {
    await Promise.all(
      this.ledger
        .live()
        .map((tracked) => deleteResource(this.#run.cluster, this.namespace, this.ledger, tracked)),
    );
    return this.converge();
  }

  /**
   * The end of every churn: wait for convergence and audit, then delete everything, wait until it is
   * gone and audit again. Leaks, duplicates and stuck finalizers are the worst of both audits.
   */
  async settle(): Promise<Settled> {
    const convergence = await this.converge();
    const callsAtConvergence = this.sim.calls.snapshot();
    const converged = await this.audit();
    const cleanup = await this.deleteEverything();
    return { convergence, callsAtConvergence, cleanup, findings: worstOf(converged, await this.audit()) };
  }

  async audit(): Promise<Findings> {
    this.history.sample();
    return audit(this.ledger, await this.observe(), this.history);
  }

  /** Stops the operators and the simulator; resources left behind lose their finalizers and go. */
  async close(): Promise<void> {
    await Promise.all(this.#everyReplica.map((replica) => replica.stop()));
    this.history.stop();
    await this.#releaseLeftovers().catch((error: unknown) =>
      this.#run.log(`could not clear ${this.namespace}: ${String(error)}`),
    );
    await this.#relay?.close();
    await this.sim.stop();
  }

  async #releaseLeftovers(): Promise<void> {
    const { cluster } = this.#run;
    for (const [key, resource] of await readResources(cluster, this.namespace)) {
      const kind = key.slice(0, key.indexOf('/')) as KindName;
      const { name } = resource.metadata;
      await cluster.patch(resourceOf(kind), this.namespace, name, { metadata: { finalizers: null } });
      await remove(cluster, this.namespace, kind, name);
    }
  }
}
