// Small numeric and printing helpers for the bench. Figures only: nothing here asserts a timing.

export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of an ascending-sorted sample (p in 0..100). */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, x) => sum + x, 0) / Math.max(1, sorted.length);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
    mean,
  };
}

export const ms = (x: number): string => (Number.isFinite(x) ? `${x < 10 ? x.toFixed(2) : x.toFixed(1)} ms` : 'n/a');
export const ratio = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(2)}x` : 'n/a');
export const percent = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(x < 0.001 ? 4 : 2)} %` : 'n/a');

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(2)} MB`;
}

/** A plain left/right aligned text table: numbers (and unit-suffixed numbers) align right. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => /^[-\d.,]+(\s?\S+)?$|^n\/a$|^-$/.test(String(r[i] ?? '-'))));
  const line = (r: string[]) =>
    r
      .map((c, i) => (numeric[i] && i > 0 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

export function section(title: string): void {
  console.log(`\n${'='.repeat(100)}\n${title}\n${'='.repeat(100)}`);
}

export function note(text: string): void {
  console.log(`  note: ${text}`);
}

/** Seconds since `start` (performance.now() based), for progress lines. */
export const elapsed = (start: number): string => `${((performance.now() - start) / 1000).toFixed(1)} s`;
