/**
 * Free loopback ports for the servers and services the dev stack, the harness and the
 * tests start: below the kernel's ephemeral range, and never the same one twice in one
 * process, so that nothing else can take a port between the moment it is chosen and the
 * moment its server listens on it.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A free loopback port below the kernel's ephemeral range (ip_local_port_range), so
 * that no outgoing connection (a Kafka client's, a health check's) can take it between
 * now and the moment a server listens on it, as one from port 0 could.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  for (let i = 0; i < 50; i++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    // Never the same port twice in one process: two servers not yet listening would share it.
    if (!handedOut.has(port) && (await canListen(port))) {
      handedOut.add(port);
      return port;
    }
  }
  return listenOn(0);
}

const handedOut = new Set<number>();

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function canListen(port: number): Promise<boolean> {
  return listenOn(port).then(
    () => true,
    () => false,
  );
}

function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const bound = (srv.address() as { port: number }).port;
      srv.close(() => resolve(bound));
    });
  });
}

/** `preferred` when set, else `fallback` when it is free, else a free port (npm start's fixed ports). */
export async function portOr(preferred: string | undefined, fallback: number): Promise<number> {
  if (preferred) return Number(preferred);
  return (await canListen(fallback)) ? fallback : freePort();
}
