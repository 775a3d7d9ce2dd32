/**
 * An HTTP receiver for delivery tests (webhooks, SSF push) that holds its first requests without an
 * answer, so a server can be killed while its attempts are in flight, then answers `status` once
 * released. Each request is kept with its body and headers.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

export interface HoldingReceiver {
  /** `http://127.0.0.1:<port><path>`. */
  readonly url: string;
  readonly got: readonly Received[];
  /** From now on every request (and none of those held) is answered with the status. */
  release(): void;
  close(): Promise<void>;
}

export async function holdingReceiver(path: string, status: number): Promise<HoldingReceiver> {
  const got: Received[] = [];
  const held: http.ServerResponse[] = [];
  let hold = true;
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      got.push({ body, headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])) });
      // The first attempts never get an answer: the server dies waiting.
      if (hold) held.push(res);
      else res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    got,
    release: () => (hold = false),
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Waits until `check` holds, failing after `ms`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  for (const end = Date.now() + ms; !(await check());) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
