import { isIPv6 } from 'node:net';

// The string formats of a CRD schema the apiserver checks (kube-openapi's strfmt registry), for the
// formats our CRDs use. The numeric formats (int32, int64, float, double) are not checked by the apiserver
// beyond the type; any other format fails loading the CRD (crd.ts), so none is skipped unnoticed.

export const CHECKED_FORMATS = {
  uri: isRequestUri,
  'date-time': isDateTime,
} as const satisfies Record<string, (text: string) => boolean>;
export const UNCHECKED_FORMATS = ['int32', 'int64', 'float', 'double'] as const;

/** Go's `url.ParseRequestURI(text)` succeeds: what strfmt's `uri` format asks (go 1.26, strict colons). */
export function isRequestUri(text: string): boolean {
  if (text === '' || [...text].some((c) => c < ' ' || c === '\x7f')) return false;
  if (text === '*') return true;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(text)?.[0].slice(0, -1) ?? '';
  if (scheme === '' && text.startsWith(':')) return false;
  let rest = scheme === '' ? text : text.slice(scheme.length + 1);
  rest = rest.endsWith('?') && rest.split('?').length === 2 ? rest.slice(0, -1) : (rest.split('?')[0] ?? '');
  if (!rest.startsWith('/')) return scheme !== '';
  if (scheme !== '' && rest.startsWith('//')) {
    const slash = rest.indexOf('/', 2);
    const authority = slash < 0 ? rest.slice(2) : rest.slice(2, slash);
    if (!validAuthority(scheme.toLowerCase(), authority)) return false;
    rest = slash < 0 ? '' : rest.slice(slash);
  }
  return validEscapes(rest, false);
}

function validAuthority(scheme: string, authority: string): boolean {
  const at = authority.lastIndexOf('@');
  const host = at < 0 ? authority : authority.slice(at + 1);
  if (!validHost(scheme, host)) return false;
  if (at < 0) return true;
  const userinfo = authority.slice(0, at);
  return /^[A-Za-z0-9\-._:~!$&'()*+,;=%@]*$/.test(userinfo) && validEscapes(userinfo, false);
}

const PORT = /^(:[0-9]*)?$/;

function validHost(scheme: string, host: string): boolean {
  const open = host.lastIndexOf('[');
  if (open > 0) return false;
  if (open === 0) {
    const close = host.lastIndexOf(']');
    if (close < 0 || !PORT.test(host.slice(close + 1))) return false;
    const literal = host.slice(1, close);
    const zone = literal.indexOf('%25');
    const address = zone < 0 ? literal : literal.slice(0, zone);
    return validEscapes(address, true) && isIPv6(unescaped(address));
  }
  const first = host.indexOf(':');
  if (first >= 0) {
    const colon = scheme === 'http' || scheme === 'https' ? first : host.lastIndexOf(':');
    if (!PORT.test(host.slice(colon))) return false;
  }
  return validEscapes(host, true);
}

function unescaped(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

// Characters a host may hold unescaped, besides letters and digits (net/url's encodeHost table).
const HOST_CHARACTERS = new Set('!"$&\'()*+,-.:;<=>[]_~');

/** Every `%` starts two hex digits; in a host, escapes only of non-ASCII bytes (or %25), other characters allowed. */
function validEscapes(text: string, host: boolean): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (c === '%') {
      const hex = text.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return false;
      if (host && Number.parseInt(hex.charAt(0), 16) < 8 && hex !== '25') return false;
      i += 2;
    } else if (host && c.charCodeAt(0) < 0x80 && !/[A-Za-z0-9]/.test(c) && !HOST_CHARACTERS.has(c)) {
      return false;
    }
  }
  return true;
}

const TIME = /^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$/;

/** strfmt's `IsDateTime`: an RFC 3339 date, `t`, and a time of day with a zone. */
export function isDateTime(text: string): boolean {
  const [date = '', time] = text.toLowerCase().split('t');
  if (time === undefined || !isFullDate(date)) return false;
  const match = TIME.exec(time);
  return match !== null && (match[1] ?? '') <= '23' && (match[2] ?? '') <= '59' && (match[3] ?? '') <= '59';
}

function isFullDate(text: string): boolean {
  const match = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/.exec(text);
  if (!match) return false;
  const [year, month, day] = match.slice(1).map(Number) as [number, number, number];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
