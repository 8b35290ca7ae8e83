import { expect } from 'chai';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { Curve } from '../../bench/scale/curve.js';
import { axisLabels, curveSvg, niceTicks, panelsOf, tickLabel, xScale } from '../../bench/scale/svg.js';

interface Circle {
  '@_cx': string;
  '@_cy': string;
  '@_data-x': string;
  '@_data-value': string;
}
interface SeriesGroup {
  '@_data-key': string;
  circle?: Circle[];
  polyline?: { '@_points': string }[];
}
interface Panel {
  '@_data-unit': string;
  g: SeriesGroup[];
}

const curve: Curve = {
  id: 'gateway-keys',
  title: 'Gateway <events> & memory by access keys',
  xLabel: 'access keys',
  series: [
    { key: 'eps', label: 'events/s', unit: 'events/s' },
    { key: 'peak', label: 'peak RSS', unit: 'MB' },
    { key: 'idle', label: 'idle RSS', unit: 'MB' },
    { key: 'p99', label: 'p99', unit: 'ms', chart: false },
  ],
  // Out of order on purpose: the chart sorts by x.
  points: [
    { x: 10_000, values: { eps: 9000, peak: 210, idle: 120, p99: 30 } },
    { x: 1, values: { eps: 10_000, peak: 180, idle: NaN, p99: 20 } },
    { x: 100, values: { eps: 9800, peak: 185, idle: 101, p99: 22 } },
  ],
  notes: [],
};

function parse(svg: string): { panels: Panel[]; root: Record<string, unknown> } {
  const parser = new XMLParser({
    ignoreAttributes: false,
    isArray: (name) => ['g', 'circle', 'polyline', 'line', 'text'].includes(name),
  });
  const doc = parser.parse(svg) as { svg: Record<string, unknown> & { g: Panel[] } };
  return { panels: doc.svg.g, root: doc.svg };
}

describe('bench:scale SVG chart (bench/scale/svg.ts)', () => {
  it('is well-formed XML with escaped text and one panel per unit of the charted series', () => {
    const svg = curveSvg(curve);
    expect(XMLValidator.validate(svg)).to.equal(true);
    expect(svg).to.include('Gateway &lt;events&gt; &amp; memory');
    const { panels } = parse(svg);
    expect(panels.map((p) => p['@_data-unit'])).to.deep.equal(['events/s', 'MB']);
    expect(panels[1]!.g.map((g) => g['@_data-key'])).to.deep.equal(['peak', 'idle']);
    // p99 is tabled only.
    expect(svg).not.to.include('data-key="p99"');
    expect(svg).to.include('access keys (log scale)');
  });

  it('places the points monotonic in x, on a log scale when they span more than 10x', () => {
    const { panels } = parse(curveSvg(curve));
    const eps = panels[0]!.g[0]!.circle!;
    expect(eps.map((c) => Number(c['@_data-x']))).to.deep.equal([1, 100, 10_000]);
    const cx = eps.map((c) => Number(c['@_cx']));
    expect(cx[0]).to.be.lessThan(cx[1]!);
    expect(cx[1]).to.be.lessThan(cx[2]!);
    // log10: 100 sits halfway between 1 and 10,000.
    expect(cx[1]! - cx[0]!).to.be.closeTo(cx[2]! - cx[1]!, 0.2);
    // A larger value is drawn higher (smaller y).
    const cy = eps.map((c) => Number(c['@_cy']));
    expect(cy[0]).to.be.lessThan(cy[2]!);
  });

  it('leaves a gap for a missing value instead of drawing through it', () => {
    const { panels } = parse(curveSvg(curve));
    const idle = panels[1]!.g[1]!;
    expect(idle.circle!.map((c) => Number(c['@_data-x']))).to.deep.equal([100, 10_000]);
    expect(idle.polyline).to.have.length(1);
    expect(idle.polyline![0]!['@_points'].split(' ')).to.have.length(2);
  });

  it('uses a linear x scale for a narrow span (1 and 2 processes)', () => {
    const s = xScale([1, 2], 0, 100);
    expect(s.log).to.equal(false);
    expect(s.at(1)).to.be.lessThan(s.at(2));
    expect(s.at(1.5)).to.be.closeTo((s.at(1) + s.at(2)) / 2, 1e-9);
    const one = xScale([5], 0, 100);
    expect(one.at(5)).to.equal(50);
  });

  it('chooses round ticks from zero that cover the values, and short labels', () => {
    expect(niceTicks(120, 210)).to.deep.equal([0, 100, 200, 300]);
    expect(niceTicks(0, 9000)).to.deep.equal([0, 2500, 5000, 7500, 10_000]);
    expect(niceTicks(0, 0.9)).to.deep.equal([0, 0.25, 0.5, 0.75, 1]);
    const t = niceTicks(0, 137_000);
    expect(t[0]).to.equal(0);
    expect(t.at(-1)).to.be.at.least(137_000);
    expect([tickLabel(2500), tickLabel(150_000), tickLabel(2_500_000), tickLabel(0.25)]).to.deep.equal([
      '2,500',
      '150k',
      '2.5M',
      '0.25',
    ]);
    // One unit per axis.
    expect(axisLabels([0, 2500, 5000, 7500, 10_000])).to.deep.equal(['0', '2.5k', '5k', '7.5k', '10k']);
    expect(axisLabels([0, 100, 200])).to.deep.equal(['0', '100', '200']);
  });

  it('draws a placeholder, still valid XML, for a curve without points', () => {
    const svg = curveSvg({ ...curve, points: [] });
    expect(XMLValidator.validate(svg)).to.equal(true);
    expect(svg).to.include('no charted figures');
    expect(panelsOf({ ...curve, series: [] })).to.deep.equal([]);
  });
});
