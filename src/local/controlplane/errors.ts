export type ControlPlaneComponent =
  | 'etcd'
  | 'apiserver'
  | 'controller-manager'
  | 'scheduler'
  | 'containerd'
  | 'kubelet'
  | 'forward';

/** The control plane binary is not where it should be; `hint` says how to get it. */
export class ControlPlaneBinaryMissingError extends Error {
  readonly binaryPath: string;

  constructor(binaryPath: string, hint: string) {
    super(`control plane binary not found at ${binaryPath}: ${hint}`);
    this.name = 'ControlPlaneBinaryMissingError';
    this.binaryPath = binaryPath;
  }
}

/** One of the servers failed to start or stop; carries its log so the cause is in the error itself. */
export class ControlPlaneError extends Error {
  readonly component: ControlPlaneComponent;
  readonly logPath: string;
  readonly logTail: string;

  constructor(component: ControlPlaneComponent, problem: string, logPath: string, logTail: string) {
    super(
      `${component} ${problem} (log: ${logPath})\n--- last lines of the ${component} log ---\n${logTail}`,
    );
    this.name = 'ControlPlaneError';
    this.component = component;
    this.logPath = logPath;
    this.logTail = logTail;
  }
}
