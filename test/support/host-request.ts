import { request } from 'node:http';

export interface HostAnswer {
  status: number;
  type: string;
  text: string;
  /** The envelope's code, when the answer is JSON. */
  code: string | undefined;
  json: { success: boolean; data?: unknown; code?: string } | undefined;
}

/**
 * A request to a service on loopback with a Host header of our choosing (fetch sends the
 * URL's own): no name is ever resolved, the connection goes to 127.0.0.1.
 */
export function hostRequest(
  base: string,
  host: string,
  path: string,
  opts: { method?: string; key?: string } = {},
): Promise<HostAnswer> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: Number(port),
        path,
        method: opts.method ?? 'GET',
        headers: { host, ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const type = String(res.headers['content-type'] ?? '');
          const json = type.startsWith('application/json') ? (JSON.parse(text) as HostAnswer['json']) : undefined;
          resolve({ status: res.statusCode ?? 0, type, text, code: json?.code, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
