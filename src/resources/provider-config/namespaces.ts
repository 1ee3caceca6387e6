import type { ProviderConfigSpec } from './schema.ts';

/**
 * Whether a ProviderConfig's `spec.namespaces` allows `namespace`, whose labels are `labels`: listed by name,
 * or matched by the selector (an empty selector matches every namespace).
 */
export function allowsNamespace(
  allowed: ProviderConfigSpec['namespaces'],
  namespace: string,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (allowed.names?.includes(namespace)) return true;
  if (allowed.selector === undefined) return false;
  return Object.entries(allowed.selector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
}
