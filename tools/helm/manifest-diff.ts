import { isDeepStrictEqual } from 'node:util';
import { loadAll } from 'js-yaml';

// What one rendering of the chart adds to or changes in another, object by object: the content of a file
// that, applied after the first rendering, gives the second.

/** One document of `helm template`'s output: its text as rendered (comments kept) and what it parses to. */
export interface RenderedDocument {
  /** `Kind namespace/name`, or `Kind name` for a cluster-scoped object. */
  readonly key: string;
  readonly text: string;
  readonly object: unknown;
}

export interface ManifestDiff {
  /** The objects to apply after the first rendering, as the second renders them and in its order. */
  readonly documents: readonly RenderedDocument[];
  /** Keys of the objects only the second rendering has. */
  readonly added: readonly string[];
  /** Keys of the objects both have and render otherwise. */
  readonly changed: readonly string[];
}

/** Applying more objects cannot delete one: a rendering that drops an object cannot be reached that way. */
export class DroppedObjectError extends Error {
  override readonly name = 'DroppedObjectError';
}

interface Identified {
  kind?: unknown;
  metadata?: { name?: unknown; namespace?: unknown };
}

function keyOf(object: unknown, text: string): string {
  const { kind, metadata } = (object ?? {}) as Identified;
  if (typeof kind !== 'string' || typeof metadata?.name !== 'string') {
    throw new Error(`a rendered document has no kind or name:\n${text}`);
  }
  const namespace = typeof metadata.namespace === 'string' ? `${metadata.namespace}/` : '';
  return `${kind} ${namespace}${metadata.name}`;
}

/** The documents of a multi-document YAML stream, in order, empty ones left out. */
export function documentsOf(rendered: string): RenderedDocument[] {
  const documents: RenderedDocument[] = [];
  const keys = new Set<string>();
  for (const part of rendered.split(/^---$/m)) {
    // A part holding comments alone is no document (js-yaml's load refuses it; loadAll finds none).
    const [object] = loadAll(part);
    if (object === null || object === undefined) continue;
    const text = part.trim();
    const key = keyOf(object, text);
    if (keys.has(key)) throw new Error(`${key} is rendered twice`);
    keys.add(key);
    documents.push({ key, text, object });
  }
  return documents;
}

/** The objects of `to` that `from` lacks or renders otherwise, in `to`'s order; compared parsed, not as text. */
export function manifestDiff(from: string, to: string): ManifestDiff {
  const before = new Map(documentsOf(from).map((document) => [document.key, document.object]));
  const after = documentsOf(to);
  const afterKeys = new Set(after.map((document) => document.key));
  const dropped = [...before.keys()].filter((key) => !afterKeys.has(key));
  if (dropped.length > 0) {
    throw new DroppedObjectError(
      `the second rendering drops ${dropped.join(', ')}: a file applied after the first cannot remove it`,
    );
  }
  const documents = after.filter(
    (document) => !before.has(document.key) || !isDeepStrictEqual(before.get(document.key), document.object),
  );
  return {
    documents,
    added: documents.filter((document) => !before.has(document.key)).map((document) => document.key),
    changed: documents.filter((document) => before.has(document.key)).map((document) => document.key),
  };
}
