import { expect } from 'chai';
import {
  MONITOR_LIMITS,
  MONITOR_TYPE_MODULES,
  browserStepLabel,
  resolveBrowserUrl,
  selectorProblem,
  typeProblems,
  type BrowserStep,
  type MonitorSettings,
} from '@telemetry/contract';
import { DEFAULT_MONITOR } from '@telemetry/store';

const browser = (steps: BrowserStep[], over: Partial<MonitorSettings> = {}): MonitorSettings => ({
  ...DEFAULT_MONITOR,
  name: 'b',
  type: 'browser',
  url: 'http://127.0.0.1:8080/login',
  browser_steps: steps,
  ...over,
});

const problems = (s: MonitorSettings): string[] => typeProblems(s).map((p) => `${p.path} ${p.message}`);

describe('browser monitor module (unit)', () => {
  it('takes a sign-in flow: fill with variables, click, assert text and URL', () => {
    const s = browser(
      [
        { action: 'fill', selector: 'input[name=user]', value: 'alice' },
        { action: 'fill', selector: '#password', value: '{{password}}' },
        { action: 'click', selector: 'button:has-text("Sign in")' },
        { action: 'wait_for', text: 'Welcome' },
        { action: 'assert_text', text: 'Welcome, alice', selector: 'h1' },
        { action: 'assert_url', url: '/welcome' },
        { action: 'press', value: 'Enter', selector: '#q' },
        { action: 'goto', url: '/account?tab={{tab}}', timeout_ms: 2000 },
        { action: 'goto', url: 'https://shop.example/cart' },
      ],
      { variables: { password: 'secret', tab: 'orders' } },
    );
    expect(problems(s)).to.deep.equal([]);
  });

  it('wants 1 to maxBrowserSteps steps', () => {
    expect(problems(browser([]))).to.deep.equal([
      `/browser_steps a browser monitor has 1 to ${MONITOR_LIMITS.maxBrowserSteps} steps`,
    ]);
  });

  it("refuses a step without the fields its action needs, naming the field's path", () => {
    const s = browser([
      { action: 'goto' },
      { action: 'click' },
      { action: 'fill', selector: '#a' },
      { action: 'press' },
      { action: 'wait_for' },
      { action: 'assert_text', selector: 'h1' },
      { action: 'assert_url' },
    ]);
    expect(typeProblems(s).map((p) => p.path)).to.deep.equal([
      '/browser_steps/0/url',
      '/browser_steps/1/selector',
      '/browser_steps/2/value',
      '/browser_steps/3/value',
      '/browser_steps/4/selector',
      '/browser_steps/5/text',
      '/browser_steps/6/url',
    ]);
  });

  it('refuses fields an action does not use', () => {
    const s = browser([
      { action: 'click', selector: '#a', value: 'x' },
      { action: 'goto', url: '/', selector: '#a' },
      { action: 'assert_url', url: '/x', text: 'y' },
    ]);
    expect(problems(s)).to.deep.equal([
      '/browser_steps/0/value is not used by click',
      '/browser_steps/1/selector is not used by goto',
      '/browser_steps/2/text is not used by assert_url',
    ]);
  });

  it("refuses selectors that are no CSS and Playwright's other engines", () => {
    for (const bad of ['[', '##a', 'div[', 'text=Sign in', 'xpath=//a', 'a >> b', '//a']) {
      expect(selectorProblem(bad), bad).to.be.a('string');
    }
    for (const good of ['#submit', 'form input[type="password"]', 'li:nth-child(2n+1) > a', 'button:has-text("Go")']) {
      expect(selectorProblem(good), good).to.equal(undefined);
    }
    const paths = typeProblems(
      browser([
        { action: 'goto', url: '/' },
        { action: 'click', selector: '#' },
      ]),
    ).map((p) => p.path);
    expect(paths).to.deep.equal(['/browser_steps/1/selector']);
  });

  it('refuses a {{name}} that variables does not set, in fill values and goto URLs', () => {
    const s = browser(
      [
        { action: 'fill', selector: '#u', value: '{{user}}' },
        { action: 'fill', selector: '#p', value: '{{ password }}' },
        { action: 'goto', url: '/x/{{missing}}' },
        { action: 'fill', selector: '#p', value: '{{1bad}}' },
      ],
      { variables: { password: 'p' } },
    );
    expect(problems(s)).to.deep.equal([
      '/browser_steps/0/value uses {{user}}, which variables does not set',
      '/browser_steps/2/url uses {{missing}}, which variables does not set',
      "/browser_steps/3/value {{1bad}} is no placeholder: a variable's name is letters, digits and _, not starting with a digit",
    ]);
  });

  it('refuses goto URLs that are neither a path nor http(s), and placeholders in their origin', () => {
    const s = browser(
      [
        { action: 'goto', url: 'ftp://example.com/' },
        { action: 'goto', url: '//example.com/' },
        { action: 'goto', url: 'relative/path' },
        { action: 'goto', url: 'http://{{host}}/' },
        { action: 'press', value: 'Enter; rm' },
      ],
      { variables: { host: 'h' } },
    );
    expect(typeProblems(s).map((p) => p.path)).to.deep.equal([
      '/browser_steps/0/url',
      '/browser_steps/1/url',
      '/browser_steps/2/url',
      '/browser_steps/3/url',
      '/browser_steps/4/value',
    ]);
  });

  it('refuses \\, whitespace and control characters in a goto URL, and a relative one that leaves the origin', () => {
    const bad = [
      '/\\evil.example/x',
      '/\t/evil.example/x',
      '/\n/evil.example',
      '/a b',
      '/a\u0000',
      'http:evil.example/x',
    ];
    for (const url of bad) {
      const found = problems(browser([{ action: 'goto', url }]));
      expect(found, JSON.stringify(url)).to.have.length(1);
      expect(found[0]).to.match(/^\/browser_steps\/0\/url /);
    }
    expect(problems(browser([{ action: 'goto', url: '/\\evil.example/x' }]))[0]).to.equal(
      '/browser_steps/0/url may not contain \\, spaces, tabs, newlines or other control characters',
    );
    // A relative URL that the parser sends elsewhere is never a target of its own: it is refused.
    expect(MONITOR_TYPE_MODULES.browser.targets(browser([{ action: 'goto', url: 'https:10.0.0.1/x' }]))).to.deep.equal([
      { path: '/url', url: 'http://127.0.0.1:8080/login' },
      { path: '/browser_steps/0/url', url: 'https://10.0.0.1/' },
    ]);
  });

  it("lists the monitor's URL and each absolute goto origin as egress targets", () => {
    const s = browser([
      { action: 'goto', url: '/next' },
      { action: 'goto', url: 'http://10.0.0.1:8080/admin?x=1' },
    ]);
    expect(MONITOR_TYPE_MODULES.browser.targets(s)).to.deep.equal([
      { path: '/url', url: 'http://127.0.0.1:8080/login' },
      { path: '/browser_steps/1/url', url: 'http://10.0.0.1:8080/' },
    ]);
  });

  it('names steps without the values they type, and resolves goto URLs with encoded variables', () => {
    expect(browserStepLabel({ action: 'click', selector: '#submit' }, 2)).to.equal('step 3 click "#submit"');
    expect(browserStepLabel({ action: 'fill', selector: '#p', value: 'secret' }, 0)).to.equal('step 1 fill "#p"');
    expect(browserStepLabel({ action: 'assert_text', text: 'Welcome' }, 4)).to.equal('step 5 assert_text "Welcome"');
    const url = resolveBrowserUrl('http://127.0.0.1:1/a/b', '/q?x={{v}}', new Map([['v', 'a&b/c']]));
    expect(url?.href).to.equal('http://127.0.0.1:1/q?x=a%26b%2Fc');
  });
});
