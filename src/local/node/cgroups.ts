// The kubelet's cgroup root: a tree of the node's own name in every hierarchy, so that two nodes on one
// machine never share their pods' cgroups and stopping one leaves no cgroup behind. The kubelet requires
// its root to exist; it makes kubepods/... below it.
import { copyFile, mkdir, readdir, readFile, rmdir, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

const CGROUP_FS = '/sys/fs/cgroup';
const CGROUP2_MAGIC = 0x63677270;
const RMDIR_ATTEMPTS = 50;

/** The mounted hierarchies: the one unified one, or each v1 controller's (and the named ones). */
async function hierarchies(): Promise<string[]> {
  const { type } = await statfs(CGROUP_FS);
  if (type === CGROUP2_MAGIC) return [CGROUP_FS];
  const entries = await readdir(CGROUP_FS, { withFileTypes: true });
  // Links (cpu -> cpu,cpuacct on some machines) name a hierarchy listed under its own name too.
  return entries.filter((entry) => entry.isDirectory()).map((entry) => join(CGROUP_FS, entry.name));
}

export async function createCgroupRoot(name: string): Promise<void> {
  for (const hierarchy of await hierarchies()) {
    const dir = join(hierarchy, name);
    await mkdir(dir, { recursive: true });
    // A v1 cpuset starts with no CPUs and no memory nodes, and no task may join it until given some.
    if (await exists(join(hierarchy, 'cpuset.cpus'))) {
      for (const file of ['cpuset.cpus', 'cpuset.mems'])
        await copyFile(join(hierarchy, file), join(dir, file));
    }
  }
}

/** Removes `name`'s tree in every hierarchy, killing any process left in it first. Idempotent. */
export async function removeCgroupRoot(name: string): Promise<void> {
  for (const hierarchy of await hierarchies()) await removeTree(join(hierarchy, name));
}

/** The cgroup roots named `<prefix><index>` that exist, with their index. */
export async function cgroupRoots(prefix: string): Promise<number[]> {
  const found = new Set<number>();
  for (const hierarchy of await hierarchies()) {
    for (const entry of await readdir(hierarchy)) {
      const match = new RegExp(`^${prefix}(\\d+)$`).exec(entry);
      if (match) found.add(Number(match[1]));
    }
  }
  return [...found];
}

async function removeTree(dir: string): Promise<void> {
  let entries: string[];
  try {
    entries = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  for (const child of entries) await removeTree(join(dir, child));
  for (let attempt = 1; ; attempt++) {
    killAll(await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => ''));
    try {
      await rmdir(dir);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      // EBUSY while a killed process has not been reaped yet.
      if (code !== 'EBUSY' || attempt >= RMDIR_ATTEMPTS) throw error;
      await delay(100);
    }
  }
}

function killAll(procs: string): void {
  for (const pid of procs.split('\n').filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
