import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { usageError } from './errors.ts';

/** One object of the manifests, and where it was read: `file` or `file#n` for the nth document of several. */
export interface ManifestObject {
  readonly source: string;
  readonly object: unknown;
}

const MANIFEST_FILE = /\.(ya?ml|json)$/;

/**
 * The objects of `-f` sources, as `kubectl apply -f` reads them: a file of YAML documents (JSON is YAML),
 * `-` for standard input, or a directory, whose .yaml, .yml and .json files are read in name order (not
 * its subdirectories). A `List` (`kind: List`, `items`) gives its items. Empty documents are skipped.
 */
export async function readManifests(
  sources: readonly string[],
  stdin: () => Promise<string>,
): Promise<ManifestObject[]> {
  const objects: ManifestObject[] = [];
  for (const source of sources) {
    if (source === '-') {
      objects.push(...parse('-', await stdin()));
      continue;
    }
    const info = await stat(source).catch((error: NodeJS.ErrnoException) => {
      throw usageError(
        `cannot read ${source} (${error.code ?? error.message}): give -f FILE, -f DIRECTORY or -f -`,
      );
    });
    const files = info.isDirectory()
      ? (await readdir(source))
          .filter((name) => MANIFEST_FILE.test(name))
          .sort()
          .map((name) => join(source, name))
      : [source];
    for (const file of files) {
      const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
        throw usageError(`cannot read ${file} (${error.code ?? error.message})`);
      });
      objects.push(...parse(file, text));
    }
  }
  return objects;
}

function parse(file: string, text: string): ManifestObject[] {
  let documents: unknown[];
  try {
    documents = loadAll(text).filter((document) => document !== null && document !== undefined);
  } catch (error) {
    throw usageError(`${file} is not YAML or JSON: ${(error as Error).message.split('\n')[0]}`);
  }
  return documents.flatMap((document, index) => {
    const source = documents.length > 1 ? `${file}#${index + 1}` : file;
    return listItems(document).map((object, item, all) => ({
      source: all.length > 1 || isList(document) ? `${source}[${item}]` : source,
      object,
    }));
  });
}

function isList(document: unknown): document is { items: unknown[] } {
  return (
    typeof document === 'object' &&
    document !== null &&
    'kind' in document &&
    typeof document.kind === 'string' &&
    document.kind.endsWith('List') &&
    'items' in document &&
    Array.isArray(document.items)
  );
}

function listItems(document: unknown): unknown[] {
  return isList(document) ? document.items : [document];
}
