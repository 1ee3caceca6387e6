import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

// The command line itself, before any cluster or cloud: which flag means what in which command, and what
// `gpucloud <command> --help` says about it. kubectl's conventions: -f is a file where a command reads one
// (`tasks submit`, as `kubectl apply -f`) and --follow where it follows (`logs`, as `kubectl logs -f`).
const CLI = fileURLToPath(new URL('../../src/cli/gpucloud.ts', import.meta.url));

function gpucloud(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, GPUCLOUD_API_KEY: undefined, GPUCLOUD_API_URL: undefined } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end();
  });
}

test('tasks submit --help says -f is --file, the input, and "-f -" standard input', async () => {
  for (const args of [
    ['tasks', 'submit', '--help'],
    ['tasks', 'submit', '-h'],
    ['help', 'tasks', 'submit'],
  ]) {
    const ran = await gpucloud(args);
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout, /^usage: gpucloud tasks submit ENDPOINT \[-f FILE \| -f -\]/);
    assert.match(ran.stdout, /^ {2}-f, --file FILE +the task input, a JSON file/m);
    assert.match(ran.stdout, /"-f -" reads it from standard input/);
    assert.doesNotMatch(ran.stdout, /--follow/);
  }
});

test('logs --help says -f is --follow, and the flags every command takes', async () => {
  const ran = await gpucloud(['logs', '--help']);
  assert.equal(ran.code, 0, ran.stderr);
  assert.match(ran.stdout, /^usage: gpucloud logs POD \[-f\]/);
  assert.match(ran.stdout, /^ {2}-f, --follow +keep reading/m);
  assert.match(ran.stdout, /^ {6}--since DURATION/m);
  assert.doesNotMatch(ran.stdout, /--file/);
  assert.match(ran.stdout, /Flags of every command: -n NAMESPACE/);
});

test('every command has its own --help, and gpucloud --help points at it', async () => {
  const top = await gpucloud(['--help']);
  assert.equal(top.code, 0);
  assert.match(top.stdout, /gpucloud <command> --help lists a command's flags/);
  assert.match(top.stdout, /^ {2}tasks submit ENDPOINT \[-f FILE \| -f -\]/m);
  assert.match(top.stdout, /^ {2}logs POD \[-f\]/m);
  for (const command of [
    'metrics',
    'offers',
    'vm-types',
    'ssh',
    'cost',
    'plan',
    'tasks list',
    'tasks watch',
  ]) {
    const ran = await gpucloud([...command.split(' '), '--help']);
    assert.equal(ran.code, 0, `${command}: ${ran.stderr}`);
    assert.ok(ran.stdout.startsWith(`usage: gpucloud ${command}`), `${command}: ${ran.stdout}`);
  }
  const tasks = await gpucloud(['tasks', '--help']);
  assert.equal(tasks.code, 0);
  for (const action of ['submit', 'list', 'get', 'count', 'watch']) {
    assert.match(tasks.stdout, new RegExp(`^ {2}tasks ${action} `, 'm'));
  }
});

test('a flag of one command is refused by another, saying whose it is (exit 2)', async () => {
  const follow = await gpucloud(['tasks', 'submit', 'sle/queue', '--follow']);
  assert.equal(follow.code, 2);
  assert.match(follow.stderr, /^error: tasks submit takes no --follow: --follow is a flag of "logs"/);
  const file = await gpucloud(['logs', 'gpupod/notebook', '--file', 'input.json']);
  assert.equal(file.code, 2);
  assert.match(
    file.stderr,
    /^error: logs takes no --file: --file is a flag of "offers", "tasks submit", "plan"/,
  );
  const short = await gpucloud(['tasks', 'list', 'sle/queue', '-f', 'x']);
  assert.equal(short.code, 2);
  assert.match(
    short.stderr,
    /-f is --follow of "logs", --file of "offers", --file of "tasks submit", --file of "plan"/,
  );
  // Before the command there is no telling which -f it is.
  const early = await gpucloud(['-f', 'input.json', 'tasks', 'submit', 'sle/queue']);
  assert.equal(early.code, 2);
  assert.match(early.stderr, /^error: -f comes before the command: .*; put it after the command/);
});

test('unknown commands, actions and options are usage errors (exit 2)', async () => {
  const unknown = await gpucloud(['teleport']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command "teleport"/);
  const action = await gpucloud(['tasks', 'frob']);
  assert.equal(action.code, 2);
  assert.match(action.stderr, /tasks takes submit, list, get, count or watch, not "frob"/);
  const option = await gpucloud(['logs', 'gpupod/x', '--frob']);
  assert.equal(option.code, 2);
  assert.match(option.stderr, /logs takes no --frob: no command takes it/);
  const none = await gpucloud([]);
  assert.equal(none.code, 2);
  assert.match(none.stdout, /^usage: gpucloud <command>/);
});

test('plan --help says -f is --file, the manifests, repeated, "-" standard input, and exit 6', async () => {
  const ran = await gpucloud(['plan', '--help']);
  assert.equal(ran.code, 0, ran.stderr);
  assert.match(ran.stdout, /^usage: gpucloud plan -f FILE\|DIR\|- \[-f \.\.\.\]/);
  assert.match(ran.stdout, /^ {2}-f, --file FILE +manifests: a YAML or JSON file/m);
  assert.match(ran.stdout, /Exit 6 when a resource would not be created now/);
  const none = await gpucloud(['plan']);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /^error: plan takes the manifests with -f FILE, -f DIRECTORY or -f -/);
});
