/** The sum of every sample of metric `name` (all label sets) in a Prometheus text exposition. */
export function sumOf(exposition: string, name: string): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) {
      sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return sum;
}
