// Kubernetes resource quantities (`500m`, `2Gi`, `1e3`, `10G`) as numbers, for the values a Pod asks of its
// container: the GPU limit, the ephemeral storage the cloud pod's volume is sized from, and the
// resourceFieldRef values a kubelet resolves. Pure.

const SUFFIXES: Readonly<Record<string, number>> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei))?$/;

/** The value of `text` as a quantity, or undefined when it is not one. */
export function quantityValue(text: string | number | undefined): number | undefined {
  if (typeof text === 'number') return Number.isFinite(text) ? text : undefined;
  const match = QUANTITY.exec(text?.trim() ?? '');
  if (!match) return undefined;
  const [, number = '', exponent, suffix = ''] = match;
  const value = Number(number) * (exponent ? 10 ** Number(exponent.slice(1)) : (SUFFIXES[suffix] ?? 1));
  return Number.isFinite(value) ? value : undefined;
}
