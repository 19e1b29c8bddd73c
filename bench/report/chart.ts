// bench/results/ratios.svg: one line per row of the case table, in its order: the ratio to its
// reference (the median of the per-round ratios) as a bar, with the target marked; a row that could
// not be measured says why instead of a bar. Hand-written SVG: a dozen rectangles need no library.
import { median } from '../machinery/compare.ts';
import type { CaseRow } from './markdown.ts';

const WIDTH = 760;
const LABEL_WIDTH = 250;
const BAR_LEFT = LABEL_WIDTH + 10;
const BAR_WIDTH = 420;
const ROW = 26;
const TOP = 44;
const COLORS = { pass: '#2e7d32', fail: '#c62828', none: '#78909c' } as const;

function escapeXml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** The chart of every row of the case table; `title` goes on top. */
export function renderChart(rows: readonly CaseRow[], title: string): string {
  const bars = rows.map((row) => ({
    row,
    ratio: row.comparison === null ? null : median(row.comparison.ratios),
  }));
  // Whole quarters, past 1.0× and past the longest bar with room for its figure.
  const top = Math.ceil(Math.max(1, ...bars.map((b) => b.ratio ?? 0)) * 4 + 0.5) / 4;
  const x = (ratio: number) => BAR_LEFT + (Math.max(0, ratio) / top) * BAR_WIDTH;
  const height = TOP + bars.length * ROW + 40;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  // Grid: every 0.25×, with 1.0× (as fast as the reference) drawn darker.
  for (let tick = 0; tick <= top + 1e-9; tick += 0.25) {
    const at = x(tick).toFixed(1);
    const one = Math.abs(tick - 1) < 1e-9;
    out.push(
      `<line x1="${at}" y1="${TOP - 6}" x2="${at}" y2="${TOP + bars.length * ROW}" stroke="${one ? '#444' : '#ddd'}"${one ? ' stroke-dasharray="4 3"' : ''}/>`,
      `<text x="${at}" y="${TOP - 10}" text-anchor="middle" fill="#555">${tick.toFixed(2)}×</text>`,
    );
  }
  bars.forEach(({ row, ratio }, i) => {
    const y = TOP + i * ROW;
    const label = `<text x="${LABEL_WIDTH}" y="${y + 17}" text-anchor="end">${escapeXml(row.chartLabel)}</text>`;
    if (ratio === null) {
      // Not measured (e.g. WORKERS not available): the row's own verdict says why.
      const why = row.verdicts[0]?.actual ?? 'not measured';
      out.push(
        label,
        `<text x="${BAR_LEFT}" y="${y + 17}" fill="${COLORS.none}">not measured: ${escapeXml(why.slice(0, 60))}</text>`,
      );
      return;
    }
    const verdict = row.ratioTarget === null ? 'none' : ratio >= row.ratioTarget ? 'pass' : 'fail';
    out.push(
      label,
      `<rect x="${BAR_LEFT}" y="${y + 5}" width="${(x(ratio) - BAR_LEFT).toFixed(1)}" height="${ROW - 10}" fill="${COLORS[verdict]}"/>`,
      // The figure after the bar or after the target's tick, whichever is further right.
      `<text x="${(Math.max(x(ratio), x(row.ratioTarget ?? 0)) + 5).toFixed(1)}" y="${y + 17}">${ratio.toFixed(2)}×</text>`,
    );
    if (row.ratioTarget !== null) {
      const at = x(row.ratioTarget).toFixed(1);
      out.push(
        `<line x1="${at}" y1="${y + 2}" x2="${at}" y2="${y + ROW - 2}" stroke="#000" stroke-width="3"/>`,
      );
    }
  });
  const legend = TOP + bars.length * ROW + 24;
  out.push(
    `<rect x="10" y="${legend - 10}" width="12" height="12" fill="${COLORS.pass}"/><text x="26" y="${legend}">meets its target</text>`,
    `<rect x="140" y="${legend - 10}" width="12" height="12" fill="${COLORS.fail}"/><text x="156" y="${legend}">below its target</text>`,
    `<rect x="270" y="${legend - 10}" width="12" height="12" fill="${COLORS.none}"/><text x="286" y="${legend}">no target on the ratio</text>`,
    `<line x1="440" y1="${legend - 11}" x2="440" y2="${legend + 3}" stroke="#000" stroke-width="3"/><text x="448" y="${legend}">target</text>`,
    `<line x1="510" y1="${legend - 11}" x2="510" y2="${legend + 3}" stroke="#444" stroke-dasharray="4 3"/><text x="518" y="${legend}">as fast as the reference</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}
