import { dump } from 'js-yaml';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** A value printed as a table (its rows and columns), or as JSON or YAML (the value itself). */
export interface Printable {
  readonly value: unknown;
  readonly columns: readonly string[];
  readonly rows: ReadonlyArray<ReadonlyArray<string | number | boolean | undefined>>;
  /** More tables, printed after this one with a blank line between; JSON and YAML print `value` alone. */
  readonly more?: readonly Printable[];
}

export function render(printable: Printable, format: OutputFormat): string {
  if (format === 'json') return `${JSON.stringify(printable.value, null, 2)}\n`;
  if (format === 'yaml') return dump(printable.value, { noRefs: true, lineWidth: -1 });
  return [printable, ...(printable.more ?? [])].map(({ columns, rows }) => table(columns, rows)).join('\n');
}

/** Columns padded to their widest cell, upper-case headers, as kubectl prints them. */
export function table(
  columns: readonly string[],
  rows: ReadonlyArray<ReadonlyArray<string | number | boolean | undefined>>,
): string {
  const cells = [columns.map((column) => column.toUpperCase()), ...rows.map((row) => row.map(text))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('   ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

function text(cell: string | number | boolean | undefined): string {
  return cell === undefined ? '<none>' : String(cell);
}

const BARS = '▁▂▃▄▅▆▇█';

/** A terminal sparkline of `values`, scaled between their minimum and maximum. */
export function sparkline(values: readonly number[]): string {
  if (values.length === 0) return '';
  const min = Math.min(...values);
  const max = Math.max(...values);
  const span = max - min;
  return values
    .map((value) => BARS[span === 0 ? 0 : Math.round(((value - min) / span) * (BARS.length - 1))])
    .join('');
}
