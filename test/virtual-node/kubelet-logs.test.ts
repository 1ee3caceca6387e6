import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readLogs } from '../../src/api/pod-logs.ts';
import type { PodLogLine, PodLogsQuery } from '../../src/api/schemas/pods.ts';
import { ServingError } from '../../src/serving/status.ts';
import { MAX_TAIL_LINES, readContainerLogOptions } from '../../src/virtual-node/kubelet-api/log-options.ts';
import { ContainerLogWriter } from '../../src/virtual-node/kubelet-api/log-writer.ts';

// A container log as the kubelet writes it, from the cloud's log lines: the options read at the edge, and
// the writer that applies timestamps, tail and byte limit.
const line = (content: string, second = 0): PodLogLine => ({
  timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString(),
  level: 'INFO',
  content,
});

async function written(
  options: { timestamps?: boolean; tailLines?: number; limitBytes?: number },
  lines: PodLogLine[],
  after: PodLogLine[] = [],
): Promise<string> {
  const chunks: Buffer[] = [];
  const writer = new ContainerLogWriter(
    { timestamps: options.timestamps ?? false, tailLines: options.tailLines, limitBytes: options.limitBytes },
    async (chunk) => {
      chunks.push(chunk);
    },
  );
  for (const each of lines) await writer.line(each);
  await writer.caughtUp();
  for (const each of after) await writer.line(each);
  return Buffer.concat(chunks).toString();
}

function refusal(query: string): string {
  try {
    readContainerLogOptions(new URLSearchParams(query), Date.now());
  } catch (error) {
    assert.ok(error instanceof ServingError);
    assert.equal(error.code, 400);
    return error.message;
  }
  assert.fail(`${query} was taken`);
}

describe('container log options', () => {
  test('read as the apiserver sends them', () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const options = readContainerLogOptions(
      new URLSearchParams(
        'follow=true&timestamps=1&tailLines=5&limitBytes=100&sinceTime=2026-01-01T11:00:00Z',
      ),
      now,
    );
    assert.deepEqual(options, {
      follow: true,
      previous: false,
      timestamps: true,
      tailLines: 5,
      sinceMs: 3_600_000,
      limitBytes: 100,
    });
    assert.equal(readContainerLogOptions(new URLSearchParams('sinceSeconds=30'), now).sinceMs, 30_000);
    // A time before 1970 starts at 1970, one after now at now: the cloud takes neither.
    assert.equal(
      readContainerLogOptions(new URLSearchParams('sinceTime=1960-01-01T00:00:00Z'), now).sinceMs,
      now,
    );
    assert.equal(
      readContainerLogOptions(new URLSearchParams('sinceTime=2030-01-01T00:00:00Z'), now).sinceMs,
      0,
    );
  });

  test('a bad value is a 400 naming its parameter', () => {
    assert.match(refusal('tailLines=-1'), /^tailLines: /);
    assert.match(refusal(`tailLines=${MAX_TAIL_LINES + 1}`), /^tailLines: /);
    assert.match(refusal('follow=yes'), /^follow: must be true or false/);
    assert.match(refusal('sinceTime=noon'), /^sinceTime: must be an RFC 3339 time/);
    assert.match(refusal('sinceSeconds=0'), /^sinceSeconds: /);
    assert.match(refusal('limitBytes=0'), /^limitBytes: /);
    assert.match(
      refusal('sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z'),
      /^sinceTime: .*exclude each other/,
    );
    assert.match(refusal('tailLines=1&tailLines=2'), /^tailLines: given more than once/);
    assert.match(refusal('stream=All'), /^"stream": not a parameter of this path/);
  });
});

describe('the container log writer', () => {
  test('writes the content only, or after its time when asked', async () => {
    assert.equal(await written({}, [line('a'), line('b', 1)]), 'a\nb\n');
    assert.equal(await written({ timestamps: true }, [line('a')]), `${line('a').timestamp} a\n`);
  });

  test('a tail keeps the last lines of the log as it was, then writes what comes after', async () => {
    const many = Array.from({ length: 500 }, (_, i) => line(`l${i}`));
    assert.equal(await written({ tailLines: 2 }, many, [line('new')]), 'l498\nl499\nnew\n');
    assert.equal(await written({ tailLines: 0 }, many, [line('new')]), 'new\n');
    assert.equal(await written({ tailLines: 10 }, [line('only')]), 'only\n');
  });

  test('stops at limitBytes, cutting the last line there', async () => {
    assert.equal(await written({ limitBytes: 5 }, [line('abc'), line('defg'), line('h')]), 'abc\nd');
  });
});

describe('readLogs', () => {
  test('says once when the log as it was is read, before following it', async () => {
    const events: string[] = [];
    const pages = [
      { items: [line('a')], nextCursor: '1' },
      { items: [line('b', 1)], nextCursor: null },
      { items: [line('c', 2)], nextCursor: null },
    ];
    const stop = new AbortController();
    let reads = 0;
    await readLogs(
      async (_query: PodLogsQuery) => {
        const page = pages[Math.min(reads++, pages.length - 1)] ?? { items: [], nextCursor: null };
        if (reads > pages.length) stop.abort();
        return page;
      },
      { follow: true, pollMs: 0, signal: stop.signal, onCaughtUp: () => void events.push('caught up') },
      (_text, each) => void events.push(each.content),
    );
    assert.deepEqual(events.slice(0, 4), ['a', 'b', 'caught up', 'c']);
    assert.equal(events.filter((e) => e === 'caught up').length, 1);
  });
});
