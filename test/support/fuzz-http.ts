/**
 * One HTTP exchange for the fuzzers of the doors beyond the admin API (the SSF transmitter, the web
 * template's back-channel logout): a new connection to 127.0.0.1 with the Host header and the path
 * exactly as generated (fetch would normalize `..` and `%2e`), under a deadline (test/support/fuzz.ts)
 * that turns an answer that never comes into a failure naming the request as a hang.
 */
import http from 'node:http';
import { answered, deadline } from './fuzz.ts';

export interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

export interface Exchange {
  readonly method: string;
  /** The Host header (a tenant's host, an app's). */
  readonly host: string;
  /** Sent as it is: already percent-encoded where it should be, junk where it should not. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
}

export function exchange(port: number, r: Exchange): Promise<Answer> {
  const what = `${r.method} http://${r.host}${r.path} ${JSON.stringify(r.headers ?? {}).slice(0, 300)} ${typeof r.body === 'string' ? r.body.slice(0, 300) : r.body === undefined ? '' : `<${r.body.length} bytes>`}`;
  return answered(what, () => new Promise<Answer>((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, method: r.method, path: r.path, agent: false, signal: deadline(),
      headers: { host: r.host, ...(r.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(r.body)) }), ...r.headers },
    }, (res) => {
      answeredEarly = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    // A server that answers before it has read a body it refuses (too large, an encoding it will not
    // read) and closes the connection leaves the rest of the body unwritable: EPIPE or a reset after
    // the answer is the answer's, not a failure of the exchange.
    let answeredEarly = false;
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (answeredEarly && (err.code === 'EPIPE' || err.code === 'ECONNRESET')) return;
      reject(err);
    });
    req.end(r.body);
  }));
}

/** What a failed check prints: the input and the answer, both cut short. */
export const shown = (input: string, r: Answer) => `${input.slice(0, 600)}\n  → ${r.status} ${r.text.slice(0, 600)}`;

/**
 * Node's HTTP parser answers a request line or headers it will not read (431, or 400 for a malformed
 * request) itself, with no body, before any of the server's code runs: that is a refusal too.
 */
export const refusedByHttpParser = (r: Answer) => (r.status === 431 || r.status === 400) && r.text === '' && r.headers['x-request-id'] === undefined;

/** Percent-encodes every byte but the unreserved ones (lone surrogates become U+FFFD, as a browser sends them). */
export const pct = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
