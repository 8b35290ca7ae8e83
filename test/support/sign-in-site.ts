import { createServer, type Server } from 'node:http';

/** The password the site takes (a monitor's sealed variable). */
export const SIGN_IN_PASSWORD = 'hunter2-secret';

/**
 * A browser monitor's steps that sign in to the site as alice (the password from the
 * monitor's variable `password`) and assert the welcome; its settings give
 * `variables: { password: SIGN_IN_PASSWORD }`.
 */
export const SIGN_IN_STEPS = [
  { action: 'fill', selector: 'input[name=user]', value: 'alice' },
  { action: 'fill', selector: 'input[type=password]', value: '{{password}}' },
  { action: 'click', selector: '#submit' },
  { action: 'assert_text', text: 'Welcome, alice', timeout_ms: 2500 },
];

/**
 * A loopback site to sign in to: the form posts user and password, the answer sets a
 * session cookie and redirects to /welcome, which greets the session's user (or, once
 * `broken`, shows an error). /leaky loads an image from an address the default egress
 * policy denies (10.0.0.1: an IP literal refused before anything is sent).
 */
export class SignInSite {
  broken = false;
  port = 0;
  /** Requests that reached the site, by path (the runner fetched them for the page). */
  readonly hits: string[] = [];
  private server: Server | undefined;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://site');
      this.hits.push(`${req.method} ${url.pathname}`);
      const html = (body: string) =>
        res
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(`<!doctype html><title>Shop</title>${body}`);
      if (url.pathname === '/login' && req.method === 'POST') {
        let body = '';
        req.on('data', (d: Buffer) => (body += d.toString()));
        req.on('end', () => {
          const form = new URLSearchParams(body);
          const ok = form.get('password') === SIGN_IN_PASSWORD;
          res
            .writeHead(303, {
              location: ok ? '/welcome' : '/?failed=1',
              ...(ok ? { 'set-cookie': `session=${form.get('user') ?? ''}; Path=/; HttpOnly` } : {}),
            })
            .end();
        });
        return;
      }
      if (url.pathname === '/welcome') {
        const user = /session=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
        if (this.broken || !user) return html('<h1>Something went wrong</h1><p>Please try again later.</p>');
        return html(`<h1>Welcome, ${user}</h1>`);
      }
      if (url.pathname === '/leaky') return html('<h1>Leaky page</h1><img src="http://10.0.0.1/pixel.png" alt="">');
      if (url.pathname === '/ping') return res.writeHead(200).end('ok');
      return html(
        '<h1>Sign in</h1><form method="post" action="/login"><input name="user"><input name="password" type="password"><button id="submit">Sign in</button></form>',
      );
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}
