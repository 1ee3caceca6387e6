// A container log as the kubelet writes it: each line's content, after its time when `timestamps` is
// asked; only the last `tailLines` lines of what the log held when it was read; no more than `limitBytes`
// bytes, the last line cut where the limit falls.
import type { PodLogLine } from '../../api/schemas/pods.ts';

export interface LogWriterOptions {
  readonly timestamps: boolean;
  readonly tailLines: number | undefined;
  readonly limitBytes: number | undefined;
}

export class ContainerLogWriter {
  readonly #options: LogWriterOptions;
  readonly #write: (chunk: Buffer) => Promise<void>;
  /** The lines held back until the log is read to its end, when a tail is asked. */
  #tail: string[] | undefined;
  #written = 0;

  /** `write` sends bytes on, waiting for the reader when it must. */
  constructor(options: LogWriterOptions, write: (chunk: Buffer) => Promise<void>) {
    this.#options = options;
    this.#write = write;
    this.#tail = options.tailLines === undefined ? undefined : [];
  }

  /** Whether `limitBytes` is reached: nothing more will be written. */
  get full(): boolean {
    return this.#options.limitBytes !== undefined && this.#written >= this.#options.limitBytes;
  }

  async line(line: PodLogLine): Promise<void> {
    const text = `${this.#options.timestamps ? `${line.timestamp} ` : ''}${line.content}\n`;
    if (this.#tail === undefined) return this.#send(text);
    const keep = this.#options.tailLines ?? 0;
    this.#tail.push(text);
    // Trimmed in bulk: one shift per line would make a long log's tail quadratic.
    if (this.#tail.length > 2 * keep + 64) this.#tail.splice(0, this.#tail.length - keep);
  }

  /** The log as it was is read: the tail goes out, and lines after it are written as they come. */
  async caughtUp(): Promise<void> {
    const keep = this.#options.tailLines ?? 0;
    const tail = keep === 0 ? [] : (this.#tail ?? []).slice(-keep);
    this.#tail = undefined;
    for (const text of tail) await this.#send(text);
  }

  async #send(text: string): Promise<void> {
    if (this.full) return;
    const bytes = Buffer.from(text);
    const room = (this.#options.limitBytes ?? Number.POSITIVE_INFINITY) - this.#written;
    const part = bytes.length <= room ? bytes : bytes.subarray(0, room);
    this.#written += part.length;
    await this.#write(part);
  }
}
