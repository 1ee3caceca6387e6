import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Everything every operator process of the run wrote (stdout and stderr), kept until the end: the
 * secrets scenario greps all of it, and a failing scenario can show what the operator said.
 */
export class Transcripts {
  readonly #sources: Array<{ label: string; read: () => string }> = [];

  /** Registers a process's output; `read` is called whenever the transcripts are searched. */
  add(label: string, read: () => string): void {
    this.#sources.push({ label, read });
  }

  /** Each process's output, labelled. */
  all(): Array<{ label: string; text: string }> {
    return this.#sources.map(({ label, read }) => ({ label, text: read() }));
  }

  /** Writes one file per process into `directory` (emptied first). */
  async save(directory: string): Promise<void> {
    await rm(directory, { recursive: true, force: true });
    await mkdir(directory, { recursive: true });
    for (const { label, text } of this.all()) {
      await writeFile(join(directory, `${label.replace(/[^\w.#-]+/g, '_')}.log`), text);
    }
  }
}

/** One JSON log line of the operator, as far as the suite reads it. */
export interface LogLine {
  readonly time: number;
  readonly msg: string;
  readonly level: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

/** The JSON lines of `text`; lines that are not JSON (a stack trace on stderr) are skipped. */
export function parseLogLines(text: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const raw of text.split('\n')) {
    if (!raw.startsWith('{')) continue;
    let fields: Record<string, unknown>;
    try {
      fields = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      continue;
    }
    lines.push({
      time: Date.parse(String(fields.time)),
      msg: String(fields.msg ?? ''),
      level: String(fields.level ?? ''),
      fields,
    });
  }
  return lines;
}
