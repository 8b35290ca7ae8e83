import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { eventually, newKey, runGateway, runQuery, type Running } from '../support/fixtures.js';

const run = promisify(execFile);

/**
 * Posts a 12 MB body the way Python's clients do: the whole body is written before a byte
 * of the answer is read (urllib, and requests when it is installed; urllib is the standard
 * library, so it always runs). Prints {client: {status, body} | {error}} as JSON.
 */
const PYTHON = String.raw`
import json, sys, urllib.request, urllib.error
url, headers = sys.argv[1], json.loads(sys.argv[2])
body = b'x' * (12 * 1024 * 1024)
out = {}
req = urllib.request.Request(url, data=body, method='POST', headers=headers)
try:
    with urllib.request.urlopen(req, timeout=30) as r:
        out['urllib'] = {'status': r.status, 'body': r.read().decode()}
except urllib.error.HTTPError as e:
    out['urllib'] = {'status': e.code, 'body': e.read().decode()}
except Exception as e:
    out['urllib'] = {'error': repr(e)}
try:
    import requests
except ImportError:
    requests = None
if requests is not None:
    try:
        r = requests.post(url, data=body, headers=headers, timeout=30)
        out['requests'] = {'status': r.status_code, 'body': r.text}
    except Exception as e:
        out['requests'] = {'error': repr(e)}
print(json.dumps(out))
`;

type Outcome = { status: number; body: string } | { error: string };

async function python(url: string, headers: Record<string, string>): Promise<Record<string, Outcome>> {
  const { stdout } = await run('python3', ['-c', PYTHON, url, JSON.stringify(headers)], { timeout: 60_000 });
  return JSON.parse(stdout) as Record<string, Outcome>;
}

function expect413(outcomes: Record<string, Outcome>): void {
  expect(Object.keys(outcomes)).to.include('urllib');
  for (const [client, o] of Object.entries(outcomes)) {
    expect(o, `${client}: ${JSON.stringify(o)}`).to.have.property('status', 413);
    const body = JSON.parse((o as { body: string }).body) as { success: boolean; code: string };
    expect(body, client).to.deep.include({ success: false, code: 'PAYLOAD_TOO_LARGE' });
  }
}

/** Over-limit bodies answered to clients that send everything before they read (the lingering close). */
describe('large bodies (real Kafka and ClickHouse)', function () {
  this.timeout(120_000);
  let gateway: Running;
  let query: Running;

  before(async () => {
    [gateway, query] = await Promise.all([runGateway({ RATE_LIMIT_PER_SECOND: '0' }), runQuery()]);
  });

  after(async () => {
    await Promise.all([gateway?.stop(), query?.stop()]);
  });

  it('answers a 12 MB body from Python with the 413 and our envelope at the gateway', async () => {
    const key = await newKey({ kind: 'telemetry', name: 'large bodies' });
    const url = `${gateway.url}/api/telemetry/events`;
    const headers = { 'content-type': 'application/json', 'x-access-key': key };
    await eventually('key loaded', async () => {
      const r = await fetch(url, { method: 'POST', headers, body: '{"events":[]}' });
      return r.status !== 401 ? true : undefined;
    });
    expect413(await python(url, headers));
  });

  it('answers a 12 MB body from Python with the 413 and our envelope at the query service', async () => {
    const key = await newKey({ kind: 'api', name: 'large bodies', scopes: ['monitors:read', 'monitors:write'] });
    const url = `${query.url}/api/monitors`;
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    await eventually('key loaded', async () => {
      const r = await fetch(url, { headers });
      return r.status === 200 ? true : undefined;
    });
    expect413(await python(url, headers));
  });
});
