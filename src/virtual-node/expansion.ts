// `$(VAR)` references in a container's command, args and env values, expanded by the kubelet's rules
// (k8s.io/kubernetes/third_party/forked/golang/expansion): `$$` is a literal `$`, a reference to a name
// not defined is left as it is written, and an unclosed `$(` is kept. Pure.

/** What a reference expands to: text, or a variable whose value must not be written out (a Secret's). */
export type Part = { readonly text: string } | { readonly hidden: string };

/**
 * `input` expanded: the parts in order. `lookup` gives a defined name's part, undefined for a name not
 * defined (left as `$(name)`).
 */
export function expandParts(input: string, lookup: (name: string) => Part | undefined): Part[] {
  const parts: Part[] = [];
  let text = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    text += input.slice(checkpoint, cursor);
    const { read, isName, advance } = readName(input.slice(cursor + 1));
    const found = isName ? lookup(read) : undefined;
    if (found === undefined) text += isName ? `$(${read})` : read;
    else if ('text' in found) text += found.text;
    else {
      if (text !== '') parts.push({ text });
      text = '';
      parts.push(found);
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  text += input.slice(checkpoint);
  if (text !== '' || parts.length === 0) parts.push({ text });
  return parts;
}

/** What follows a `$`: an escaped `$`, a name in parentheses, or text that is no reference. */
function readName(input: string): { read: string; isName: boolean; advance: number } {
  if (input[0] === '$') return { read: '$', isName: false, advance: 1 };
  if (input[0] === '(') {
    const close = input.indexOf(')', 1);
    if (close !== -1) return { read: input.slice(1, close), isName: true, advance: close + 1 };
    return { read: '$(', isName: false, advance: 1 };
  }
  return { read: `$${input[0]}`, isName: false, advance: 1 };
}
