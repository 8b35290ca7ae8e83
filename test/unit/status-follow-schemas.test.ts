import { expect } from 'chai';
import { createStatusFollowValidators, createValidators } from '@telemetry/contract';

/**
 * The texts and addresses of status pages people follow (docs/api.md, "Texts, addresses and
 * the bad-input corpus"): control characters nowhere in a text, invisible characters nowhere
 * in a subscriber's email. The bad-input corpus sends the same through the routes.
 */
describe('status-follow schemas: texts and subscription emails (unit)', () => {
  const v = createStatusFollowValidators();
  const update = (message: string): boolean => v.reportUpdateCreate({ state: 'identified', message });

  it('takes a text with something besides spaces, newlines and tabs included, and markup as typed', () => {
    for (const t of ['down', ' a', 'line one\nline two\ttabbed', '<script>alert(1)</script> & ]]>', 'é ü 日本'])
      expect(update(t), JSON.stringify(t)).to.equal(true);
  });

  it('refuses a control character anywhere in a text, not only before its first letter', () => {
    for (const t of ['down\u0007', 'a\u0000b', '\u001b[31mred', 'end\u007f', 'x\r', '   ', '\n\t'])
      expect(update(t), JSON.stringify(t)).to.equal(false);
    expect(v.statusReportCreate({ title: 'down\u0007', message: 'm' })).to.equal(false);
    expect(v.statusReportCreate.errors?.map((e) => e.instancePath)).to.deep.equal(['/title']);
  });

  it('refuses such a text as a maintenance window message', () => {
    const monitor = (message: string): boolean =>
      createValidators().monitorCreate({
        name: 'm',
        url: 'https://example.com',
        maintenance_windows: [{ from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z', message }],
      });
    expect(monitor('back soon')).to.equal(true);
    expect(monitor('back\u0000soon')).to.equal(false);
  });

  it('refuses an email with an invisible or direction-changing character, at /email', () => {
    expect(v.subscribe({ email: 'ann@example.com' })).to.equal(true);
    for (const ch of ['\u00ad', '\u200b', '\u200d', '\u200e', '\u202e', '\u2060', '\u2066', '\ufeff']) {
      expect(v.subscribe({ email: `an${ch}n@example.com` }), JSON.stringify(ch)).to.equal(false);
      expect(v.subscribe.errors?.map((e) => e.instancePath)).to.include('/email');
    }
  });
});
