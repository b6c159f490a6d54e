// The benchmark's table (Markdown, printed and written to bench/results.md) and its targets
// checked against it.
import type { LoadResult } from './load.ts';

export interface Row {
  works: number;
  case: string;
  product: LoadResult;
  /** The strong baseline: one prepared statement per person page (bench/baseline.ts). */
  baseline: LoadResult;
  /** The first baseline, two statements per page, kept for comparison. */
  reference: LoadResult;
}

const personPage = /^person (JSON|XML|HTML)$/;
const fixed = (n: number, digits = 1) => n.toFixed(digits);

export function formatTable(rows: readonly Row[]): string {
  const lines = [
    '| works | case | server | req/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | non-2xx | peak RSS MB | product/this |',
    '|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const row of rows) {
    for (const [server, r] of [
      ['product', row.product],
      ['baseline', row.baseline],
      ['reference', row.reference],
    ] as const) {
      const ratio = server === 'product' ? '' : `${fixed(row.product.requestsPerSecond / r.requestsPerSecond, 2)}x`;
      lines.push(
        `| ${row.works.toLocaleString('en')} | ${row.case} | ${server} | ${fixed(r.requestsPerSecond, 0)} | ${r.p50} | ${r.p99} | ${r.p99_9} | ${r.max} | ${r.errors} | ${r.non2xx} | ${fixed(r.peakRssMb, 0)} | ${ratio} |`,
      );
    }
  }
  return lines.join('\n');
}

/** The benchmark's targets, each with the figures that decide it. */
export function checkTargets(rows: readonly Row[], sizes: readonly number[]): string[] {
  const small = Math.min(...sizes);
  const large = Math.max(...sizes);
  const find = (works: number, name: string) => rows.find((r) => r.works === works && r.case === name);
  const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
  const out: string[] = [];
  for (const row of rows.filter((r) => personPage.test(r.case))) {
    const throughput = row.product.requestsPerSecond / row.baseline.requestsPerSecond;
    const p99 = row.product.p99 / Math.max(row.baseline.p99, 1);
    const ok = throughput >= 1 && p99 <= 1.5 && row.product.errors === 0 && row.product.non2xx === 0;
    out.push(
      `${verdict(ok)}: ${row.case} at ${row.works.toLocaleString('en')} works: ${fixed(throughput, 2)}x the baseline's requests/s (≥ 1.0), p99 ${fixed(p99, 2)}x (≤ 1.5), ${row.product.errors} errors, ${row.product.non2xx} non-2xx`,
    );
  }
  for (const name of rows.filter((r) => r.works === large && r.case.startsWith('search')).map((r) => r.case)) {
    const big = find(large, name);
    const base = find(small, name);
    if (!big) continue;
    out.push(
      `${verdict(big.product.p50 < 10)}: ${name} at ${large.toLocaleString('en')} works: p50 ${big.product.p50} ms (< 10)`,
    );
    if (base && large !== small) {
      const slowdown = base.product.requestsPerSecond / big.product.requestsPerSecond;
      out.push(
        `${verdict(slowdown <= 1.5)}: ${name}: ${fixed(base.product.requestsPerSecond, 0)} req/s at ${small.toLocaleString('en')} works, ${fixed(big.product.requestsPerSecond, 0)} at ${large.toLocaleString('en')} (${fixed(slowdown, 2)}x slower, ≤ 1.5)`,
      );
    }
  }
  if (large !== small) {
    for (const name of rows.filter((r) => r.works === large && personPage.test(r.case)).map((r) => r.case)) {
      const [a, b] = [find(small, name), find(large, name)];
      if (!a || !b) continue;
      const change = Math.abs(b.product.requestsPerSecond / a.product.requestsPerSecond - 1);
      out.push(
        `${verdict(change <= 0.2)}: ${name}: ${fixed(a.product.requestsPerSecond, 0)} → ${fixed(b.product.requestsPerSecond, 0)} req/s from ${small.toLocaleString('en')} to ${large.toLocaleString('en')} works (${fixed(change * 100, 0)}% apart, ≤ 20%)`,
      );
    }
  }
  const peak = Math.max(...rows.map((r) => r.product.peakRssMb));
  out.push(`${verdict(peak < 150)}: peak RSS of the product's worker under load: ${fixed(peak, 0)} MB (< 150)`);
  return out;
}
