// Finds the apiserver and the credentials to talk to it: a kubeconfig file or the pod's service
// account. It replaces client-node's `KubeConfig`, whose import alone loads the whole generated API
// (~50 MB RSS) into a process that only needs a URL, TLS material and an Authorization header.
import { type ExecFileException, execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { load as loadYaml, YAMLException } from 'js-yaml';
import { z } from 'zod';
import { Agent, buildConnector } from '../undici.ts';

/** TLS settings of the connection to the apiserver; a new object whenever they change. */
export interface KubeTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly rejectUnauthorized: boolean;
  /** Name checked against the serving certificate instead of the server URL's host. */
  readonly servername?: string;
}

/** What a request needs beyond its URL: obtained per request, so rotated credentials are used. */
export interface KubeAuth {
  readonly headers: Readonly<Record<string, string>>;
  readonly tls: KubeTls;
}

/** The apiserver and how to authenticate to it. */
export interface KubeConnection {
  /** Base URL, e.g. `https://10.0.0.1:443`; API paths are appended to it. */
  readonly server: string;
  /** Where it came from (a kubeconfig path, or `in-cluster`), for messages. */
  readonly source: string;
  auth(): Promise<KubeAuth>;
}

/** A kubeconfig or the in-cluster environment cannot be used; names the offending field. */
export class KubeConfigError extends Error {
  readonly source: string;
  readonly field: string;

  constructor(source: string, field: string, detail: string, options?: ErrorOptions) {
    super(`${source}: ${field}: ${detail}`, options);
    this.name = 'KubeConfigError';
    this.source = source;
    this.field = field;
  }
}

/** Credentials could not be obtained for a request (token file unreadable, exec plugin failed). */
export class KubeCredentialError extends Error {
  readonly source: string;

  constructor(source: string, detail: string, options?: ErrorOptions) {
    super(`${source}: ${detail}`, options);
    this.name = 'KubeCredentialError';
    this.source = source;
  }
}

/**
 * An HTTP agent for the apiserver with these TLS settings. Keep-alive probes start after 30 s, as
 * client-go's do: undici's 60 s default races cloud load balancers' idle timeouts.
 */
export function createKubeDispatcher(tls: KubeTls): Agent {
  const options = { ...tls, keepAlive: true, keepAliveInitialDelay: 30_000 };
  const servername = tls.servername;
  if (servername === undefined) return new Agent({ connect: options });
  // undici prefers the request's host over a configured servername; tls-server-name must win.
  const connector = buildConnector(options);
  return new Agent({
    connect: (connectOptions, callback) => connector({ ...connectOptions, servername }, callback),
  });
}

export interface LoadKubeConnectionOptions {
  /**
   * A kubeconfig file, or a `$KUBECONFIG`-style list (the operator's --kubeconfig also comes from
   * that variable) of which the first is read; when absent, the defaults below are tried in order.
   */
  readonly kubeconfigPath?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly homeDir?: string;
  readonly serviceAccountDir?: string;
}

/**
 * Loads the connection as kubectl and client-node's `loadFromDefault` do: the given kubeconfig, else
 * `$KUBECONFIG`, else `~/.kube/config` if it exists, else the pod's service account. Of a
 * `$KUBECONFIG` list only the first file is read: merging kubeconfigs is a kubectl nicety an
 * operator does not need.
 */
export async function loadKubeConnection(options: LoadKubeConnectionOptions = {}): Promise<KubeConnection> {
  const env = options.env ?? process.env;
  const given = firstPath(options.kubeconfigPath) ?? firstPath(env.KUBECONFIG);
  if (given) return kubeConnectionFromFile(given);
  const home = join(options.homeDir ?? homedir(), '.kube', 'config');
  if (isFile(home)) return kubeConnectionFromFile(home);
  return inClusterConnection({ env, serviceAccountDir: options.serviceAccountDir });
}

export async function kubeConnectionFromFile(path: string): Promise<KubeConnection> {
  const absolute = resolve(path);
  let text: string;
  try {
    text = await readFile(absolute, 'utf8');
  } catch (err) {
    throw new KubeConfigError(absolute, 'file', `cannot read the kubeconfig: ${describe(err)}`, {
      cause: err,
    });
  }
  return kubeConnectionFromYaml(text, absolute);
}

/**
 * Parses a kubeconfig's text. `source` names it in errors; relative file paths in it resolve against
 * `source`'s directory, as kubectl resolves them.
 */
export function kubeConnectionFromYaml(text: string, source: string): KubeConnection {
  let document: unknown;
  try {
    document = loadYaml(text);
  } catch (err) {
    // Only the reason and line: js-yaml's message quotes the file, which holds tokens and keys.
    const where = err instanceof YAMLException && err.mark ? ` at line ${err.mark.line + 1}` : '';
    const reason = err instanceof YAMLException ? err.reason : 'unreadable';
    throw new KubeConfigError(source, 'file', `not valid YAML${where}: ${reason}`);
  }
  const parsed = kubeconfigSchema.safeParse(document ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KubeConfigError(source, issuePath(issue?.path ?? []), issue?.message ?? 'invalid');
  }
  return fromKubeconfig(parsed.data, source, dirname(source));
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
// Bound service-account tokens rotate; client-go re-reads the file about once a minute.
const TOKEN_REREAD_MS = 60_000;

export interface InClusterOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** Holds `token` and `ca.crt`; the kubelet mounts it at /var/run/secrets/kubernetes.io/serviceaccount. */
  readonly serviceAccountDir?: string;
  readonly tokenRereadMs?: number;
}

/** The connection of a pod: the apiserver's service address and the pod's service-account token. */
export async function inClusterConnection(options: InClusterOptions = {}): Promise<KubeConnection> {
  const env = options.env ?? process.env;
  const dir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const source = 'in-cluster';
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  const hint = 'not running in a pod? pass --kubeconfig or set KUBECONFIG';
  if (!host) throw new KubeConfigError(source, 'KUBERNETES_SERVICE_HOST', `not set (${hint})`);
  if (!port) throw new KubeConfigError(source, 'KUBERNETES_SERVICE_PORT', `not set (${hint})`);
  const caPath = join(dir, 'ca.crt');
  const ca = readTextFile(source, caPath, caPath);
  const tokens = new FileToken(source, join(dir, 'token'), options.tokenRereadMs ?? TOKEN_REREAD_MS);
  // A missing token should stop the operator at startup, not fail every request later.
  await tokens.token();
  const tls: KubeTls = { ca, rejectUnauthorized: true };
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    source,
    auth: async () => ({ headers: bearer(await tokens.token()), tls }),
  };
}

const SUPPORTED_CLUSTER_FIELDS = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
  // Neither changes how to connect.
  'extensions',
  'disable-compression',
]);

const SUPPORTED_USER_FIELDS = new Set([
  'token',
  'tokenFile',
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'exec',
  'extensions',
]);

const execEnvSchema = z.array(z.object({ name: z.string(), value: z.string() }));

const execSchema = z.looseObject({
  apiVersion: z.string(),
  command: z.string().min(1),
  args: z.array(z.string()).nullish(),
  env: execEnvSchema.nullish(),
  installHint: z.string().nullish(),
  provideClusterInfo: z.boolean().nullish(),
  interactiveMode: z.string().nullish(),
});

const kubeconfigSchema = z.looseObject({
  'current-context': z.string().nullish(),
  clusters: z
    .array(z.object({ name: z.string(), cluster: z.record(z.string(), z.unknown()) }))
    .nullish()
    .transform((v) => v ?? []),
  users: z
    .array(z.object({ name: z.string(), user: z.record(z.string(), z.unknown()).nullish() }))
    .nullish()
    .transform((v) => v ?? []),
  contexts: z
    .array(
      z.object({ name: z.string(), context: z.object({ cluster: z.string(), user: z.string().nullish() }) }),
    )
    .nullish()
    .transform((v) => v ?? []),
});

type Kubeconfig = z.output<typeof kubeconfigSchema>;

const clusterSchema = z.object({
  server: z.string().min(1),
  'certificate-authority': z.string().nullish(),
  'certificate-authority-data': z.string().nullish(),
  'insecure-skip-tls-verify': z.boolean().nullish(),
  'tls-server-name': z.string().nullish(),
});

const userSchema = z.object({
  token: z.string().nullish(),
  tokenFile: z.string().nullish(),
  'client-certificate': z.string().nullish(),
  'client-certificate-data': z.string().nullish(),
  'client-key': z.string().nullish(),
  'client-key-data': z.string().nullish(),
  exec: execSchema.nullish(),
});

function fromKubeconfig(config: Kubeconfig, source: string, baseDir: string): KubeConnection {
  const contextName = config['current-context'];
  if (!contextName) throw new KubeConfigError(source, 'current-context', 'not set: name the context to use');
  const context = config.contexts.find((c) => c.name === contextName)?.context;
  if (!context) throw new KubeConfigError(source, 'current-context', `no context named "${contextName}"`);
  const at = `contexts[${contextName}].context`;
  const namedCluster = config.clusters.find((c) => c.name === context.cluster);
  if (!namedCluster)
    throw new KubeConfigError(source, `${at}.cluster`, `no cluster named "${context.cluster}"`);
  const userName = context.user;
  const namedUser = userName ? config.users.find((u) => u.name === userName) : undefined;
  if (userName && !namedUser) throw new KubeConfigError(source, `${at}.user`, `no user named "${userName}"`);

  const clusterAt = `clusters[${namedCluster.name}].cluster`;
  const cluster = checked(source, clusterAt, namedCluster.cluster, SUPPORTED_CLUSTER_FIELDS, clusterSchema);
  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch (err) {
    throw new KubeConfigError(source, `${clusterAt}.server`, 'not a URL', { cause: err });
  }
  if (server.protocol !== 'https:' && server.protocol !== 'http:') {
    throw new KubeConfigError(source, `${clusterAt}.server`, `unsupported scheme ${server.protocol}`);
  }
  const ca = material(source, baseDir, clusterAt, cluster, 'certificate-authority');
  const baseTls: KubeTls = {
    ...(ca === undefined ? {} : { ca }),
    rejectUnauthorized: cluster['insecure-skip-tls-verify'] !== true,
    ...(cluster['tls-server-name'] ? { servername: cluster['tls-server-name'] } : {}),
  };

  const userAt = `users[${namedUser?.name ?? ''}].user`;
  const user = checked(source, userAt, namedUser?.user ?? {}, SUPPORTED_USER_FIELDS, userSchema);
  const cert = material(source, baseDir, userAt, user, 'client-certificate');
  const key = material(source, baseDir, userAt, user, 'client-key');
  if ((cert === undefined) !== (key === undefined)) {
    const missing = cert === undefined ? 'client-certificate' : 'client-key';
    throw new KubeConfigError(
      source,
      `${userAt}.${missing}`,
      'a client certificate needs both a certificate and a key',
    );
  }
  const tls: KubeTls = cert !== undefined && key !== undefined ? { ...baseTls, cert, key } : baseTls;
  const base = { server: server.toString().replace(/\/+$/, ''), source };

  if (user.exec) {
    const staticFields = ['token', 'tokenFile', 'client-certificate', 'client-certificate-data'] as const;
    const clash = staticFields.find((field) => user[field]);
    if (clash) throw new KubeConfigError(source, `${userAt}.exec`, `cannot be combined with ${clash}`);
    const plugin = new ExecPlugin(source, `${userAt}.exec`, user.exec, baseDir, {
      server: base.server,
      ...(ca === undefined ? {} : { 'certificate-authority-data': Buffer.from(ca).toString('base64') }),
      'insecure-skip-tls-verify': !baseTls.rejectUnauthorized,
      ...(baseTls.servername ? { 'tls-server-name': baseTls.servername } : {}),
    });
    const withCerts = new Map<string, KubeTls>();
    return {
      ...base,
      auth: async () => {
        const credential = await plugin.credential();
        const headers = credential.token ? bearer(credential.token) : {};
        if (!credential.cert || !credential.key) return { headers, tls };
        // The same object while the certificate is unchanged, so the connection pool is kept.
        const id = credential.cert + credential.key;
        let certTls = withCerts.get(id);
        if (!certTls) {
          certTls = { ...baseTls, cert: credential.cert, key: credential.key };
          withCerts.clear();
          withCerts.set(id, certTls);
        }
        return { headers, tls: certTls };
      },
    };
  }
  if (user.token) {
    const headers = bearer(user.token);
    return { ...base, auth: async () => ({ headers, tls }) };
  }
  if (user.tokenFile) {
    const tokens = new FileToken(source, resolve(baseDir, user.tokenFile), TOKEN_REREAD_MS);
    return { ...base, auth: async () => ({ headers: bearer(await tokens.token()), tls }) };
  }
  return { ...base, auth: async () => ({ headers: {}, tls }) };
}

/** Rejects fields this loader does not implement (rather than ignore, say, an auth-provider), then parses. */
function checked<S extends z.ZodType>(
  source: string,
  at: string,
  value: Record<string, unknown>,
  supported: ReadonlySet<string>,
  schema: S,
): z.output<S> {
  const unsupported = Object.keys(value).find((field) => !supported.has(field));
  if (unsupported) {
    throw new KubeConfigError(
      source,
      `${at}.${unsupported}`,
      `not supported by this operator (it supports ${[...supported].filter((f) => f !== 'extensions').join(', ')})`,
    );
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KubeConfigError(source, `${at}.${issuePath(issue?.path ?? [])}`, issue?.message ?? 'invalid');
  }
  return parsed.data;
}

/** PEM text from `<field>-data` (base64) or `<field>` (a file path). */
function material(
  source: string,
  baseDir: string,
  at: string,
  fields: Partial<Record<string, unknown>>,
  field: 'certificate-authority' | 'client-certificate' | 'client-key',
): string | undefined {
  const data = fields[`${field}-data`];
  if (typeof data === 'string' && data !== '') return Buffer.from(data, 'base64').toString('utf8');
  const path = fields[field];
  if (typeof path === 'string' && path !== '')
    return readTextFile(source, `${at}.${field}`, resolve(baseDir, path));
  return undefined;
}

function readTextFile(source: string, field: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new KubeConfigError(source, field, `cannot read ${path}: ${describe(err)}`, { cause: err });
  }
}

/** A bearer token kept in a file that may be rotated underneath: re-read once `rereadMs` passed. */
class FileToken {
  readonly #source: string;
  readonly #path: string;
  readonly #rereadMs: number;
  #token: string | undefined;
  #readAt = 0;

  constructor(source: string, path: string, rereadMs: number) {
    this.#source = source;
    this.#path = path;
    this.#rereadMs = rereadMs;
  }

  async token(): Promise<string> {
    if (this.#token !== undefined && Date.now() - this.#readAt < this.#rereadMs) return this.#token;
    let token: string;
    try {
      token = (await readFile(this.#path, 'utf8')).trim();
    } catch (err) {
      // A rotation replaces the file through a symlink swap; a read that loses that race keeps the
      // last token, which stays valid well beyond the re-read interval.
      if (this.#token !== undefined) return this.#token;
      throw new KubeCredentialError(this.#source, `cannot read token file ${this.#path}: ${describe(err)}`, {
        cause: err,
      });
    }
    if (token === '') {
      if (this.#token !== undefined) return this.#token;
      throw new KubeCredentialError(this.#source, `token file ${this.#path} is empty`);
    }
    this.#token = token;
    this.#readAt = Date.now();
    return token;
  }
}

const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];
const EXEC_TIMEOUT_MS = 60_000;

const execCredentialSchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('ExecCredential'),
  status: z.object({
    token: z.string().nullish(),
    clientCertificateData: z.string().nullish(),
    clientKeyData: z.string().nullish(),
    expirationTimestamp: z.string().nullish(),
  }),
});

interface ExecResult {
  readonly token?: string;
  readonly cert?: string;
  readonly key?: string;
  /** Epoch ms; the credential is used until then, forever when absent. */
  readonly expiresAt?: number;
}

/**
 * A client.authentication.k8s.io exec plugin (cloud CLIs, aws-iam-authenticator, …). Its credential
 * is cached until its `expirationTimestamp`; concurrent requests share one run of the command.
 */
class ExecPlugin {
  readonly #source: string;
  readonly #field: string;
  readonly #apiVersion: string;
  readonly #command: string;
  readonly #args: readonly string[];
  readonly #env: NodeJS.ProcessEnv;
  readonly #installHint: string | undefined;
  #current: ExecResult | undefined;
  #running: Promise<ExecResult> | undefined;

  constructor(
    source: string,
    field: string,
    exec: z.output<typeof execSchema>,
    baseDir: string,
    cluster: Record<string, unknown>,
  ) {
    this.#source = source;
    this.#field = field;
    if (!EXEC_API_VERSIONS.includes(exec.apiVersion)) {
      throw new KubeConfigError(
        source,
        `${field}.apiVersion`,
        `"${exec.apiVersion}" is not supported (use ${EXEC_API_VERSIONS.join(' or ')})`,
      );
    }
    if (exec.interactiveMode === 'Always') {
      throw new KubeConfigError(source, `${field}.interactiveMode`, 'Always: an operator has no terminal');
    }
    this.#apiVersion = exec.apiVersion;
    // As kubectl does: a relative command with a directory part is relative to the kubeconfig; a bare
    // name is looked up on PATH.
    this.#command =
      !isAbsolute(exec.command) && (exec.command.includes('/') || exec.command.includes(sep))
        ? resolve(baseDir, exec.command)
        : exec.command;
    this.#args = exec.args ?? [];
    this.#installHint = exec.installHint ?? undefined;
    const info = {
      apiVersion: exec.apiVersion,
      kind: 'ExecCredential',
      spec: { interactive: false, ...(exec.provideClusterInfo ? { cluster } : {}) },
    };
    this.#env = {
      ...process.env,
      ...Object.fromEntries((exec.env ?? []).map(({ name, value }) => [name, value])),
      KUBERNETES_EXEC_INFO: JSON.stringify(info),
    };
  }

  async credential(): Promise<ExecResult> {
    const current = this.#current;
    if (current && (current.expiresAt === undefined || Date.now() < current.expiresAt)) return current;
    this.#running ??= this.#run().finally(() => {
      this.#running = undefined;
    });
    const result = await this.#running;
    this.#current = result;
    return result;
  }

  async #run(): Promise<ExecResult> {
    const stdout = await new Promise<string>((resolveRun, reject) => {
      const child = execFile(
        this.#command,
        this.#args,
        { env: this.#env, timeout: EXEC_TIMEOUT_MS, maxBuffer: 1024 * 1024, encoding: 'utf8' },
        (err, out) => {
          if (err) reject(this.#failure(err));
          else resolveRun(out);
        },
      );
      // The plugin's diagnostics go to our stderr, as kubectl passes them on; they never enter an
      // error message (and so a log line), since a plugin may echo what it was given.
      child.stderr?.pipe(process.stderr, { end: false });
    });
    let document: unknown;
    try {
      document = JSON.parse(stdout);
    } catch {
      throw new KubeCredentialError(this.#source, `${this.#field}: "${this.#command}" printed no JSON`);
    }
    const parsed = execCredentialSchema.safeParse(document);
    if (!parsed.success) {
      // Only the paths of the problems: the values may be secrets.
      const paths = parsed.error.issues.map((issue) => issuePath(issue.path) || '(root)').join(', ');
      throw new KubeCredentialError(
        this.#source,
        `${this.#field}: "${this.#command}" printed an invalid ExecCredential (at ${paths})`,
      );
    }
    const { apiVersion, status } = parsed.data;
    if (apiVersion !== this.#apiVersion) {
      throw new KubeCredentialError(
        this.#source,
        `${this.#field}: "${this.#command}" answered ${apiVersion}, not the configured ${this.#apiVersion}`,
      );
    }
    const token = status.token || undefined;
    const cert = status.clientCertificateData || undefined;
    const key = status.clientKeyData || undefined;
    if (!token && !(cert && key)) {
      throw new KubeCredentialError(
        this.#source,
        `${this.#field}: "${this.#command}" gave neither status.token nor status.clientCertificateData with clientKeyData`,
      );
    }
    let expiresAt: number | undefined;
    if (status.expirationTimestamp) {
      expiresAt = Date.parse(status.expirationTimestamp);
      if (Number.isNaN(expiresAt)) {
        throw new KubeCredentialError(
          this.#source,
          `${this.#field}: "${this.#command}" gave an unparsable status.expirationTimestamp`,
        );
      }
    }
    return {
      ...(token ? { token } : {}),
      ...(cert && key ? { cert, key } : {}),
      ...(expiresAt === undefined ? {} : { expiresAt }),
    };
  }

  #failure(err: ExecFileException): Error {
    const command = `"${this.#command}"`;
    let detail: string;
    if (err.code === 'ENOENT') {
      detail = `${command} not found${this.#installHint ? `: ${this.#installHint}` : ''}`;
    } else if (err.killed || err.signal) {
      detail = `${command} was killed (${err.signal ?? 'timeout'}) after at most ${EXEC_TIMEOUT_MS / 1000} s`;
    } else if (typeof err.code === 'number') {
      detail = `${command} exited with code ${err.code} (its stderr, if any, is on the operator's stderr)`;
    } else {
      detail = `${command} failed: ${err.code ?? 'unknown error'}`;
    }
    // `cause` is left out: execFile's error carries the command's output.
    return new KubeCredentialError(this.#source, `${this.#field}: ${detail}`);
  }
}

function firstPath(list: string | undefined): string | undefined {
  return list?.split(delimiter).find((path) => path !== '');
}

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function issuePath(path: readonly PropertyKey[]): string {
  return path.map((part) => (typeof part === 'number' ? `[${part}]` : String(part))).join('.');
}

function describe(err: unknown): string {
  if (err instanceof Error && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}
