import { CelScalar, celEnv, isCelError, parse, plan } from '@bufbuild/cel';

// A schema's `pattern` is a Go (RE2) regular expression, searched for anywhere in the value, as CEL's
// `matches` does: so patterns go through the same maintained RE2 the CEL rules use, not JavaScript's
// RegExp, whose syntax and semantics differ (lookarounds, backreferences, Unicode classes).

const matches = plan(
  celEnv({ variables: { text: CelScalar.STRING, pattern: CelScalar.STRING } }),
  parse('text.matches(pattern)'),
);

export function re2Matches(pattern: string, text: string): boolean {
  const result = matches({ text, pattern });
  if (isCelError(result)) throw new Error(`pattern '${pattern}' is not an RE2 expression: ${result.message}`);
  return result === true;
}
