// Finds the control plane's processes through /proc: every server's command line names its data directory.
import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';

export async function processesUsing(dataDir: string): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry));
  const matches: number[] = [];
  for (const pid of pids) {
    const commandLine = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (commandLine.split('\0').some((arg) => arg.includes(dataDir))) matches.push(Number(pid));
  }
  return matches;
}

/** Polls until no process names `dataDir`, failing with the survivors after `timeoutMs`. */
export async function waitForNoProcessesUsing(dataDir: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const survivors = await processesUsing(dataDir);
    if (survivors.length === 0) return;
    if (Date.now() >= deadline) {
      throw new Error(`processes still using ${dataDir} after ${timeoutMs / 1000}s: ${survivors.join(', ')}`);
    }
    await delay(100);
  }
}
