/**
 * One delivery attempt over HTTP, shared by webhooks and SSF push: the URL's host checked against
 * the SSRF rules (destination.ts), the connection pinned to the checked address, a timeout, no
 * redirects, a bounded answer.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { RefusedDestination, destinationOf } from './destination.ts';
import type { WebhookSettings } from './options.ts';

/** Answer bytes read (then dropped), and kept for the log. */
const MAX_ANSWER_BYTES = 64 * 1024;
const KEPT_ANSWER_BYTES = 1024;

export interface Attempt {
  readonly status: number | null;
  readonly error: string | null;
  readonly answer?: string;
}

/**
 * One POST to the checked address, within `timeoutMs`; never follows a redirect. `headers` may name
 * another content-type (SSF push sends application/secevent+jwt). The answer's first bytes are kept
 * (`answer`: a receiver's error, RFC 8935 §2.3), the rest dropped.
 */
export async function post(url: URL, body: string, headers: Record<string, string>, s: Pick<WebhookSettings, 'allowPrivateAddresses' | 'timeoutMs'>, userAgent = 'idforge-webhooks/1'): Promise<Attempt> {
  let dest;
  try {
    dest = await destinationOf(url, s.allowPrivateAddresses);
  } catch (err) {
    if (err instanceof RefusedDestination) return { status: null, error: err.message };
    throw err;
  }
  // The connection goes to the address that was checked, whatever the name resolves to by then.
  const pinned = ((_host: string, options: { all?: boolean }, cb: (...a: unknown[]) => void) => {
    if (options?.all === true) cb(null, [{ address: dest.address, family: dest.family }]);
    else cb(null, dest.address, dest.family);
  }) as unknown as LookupFunction;
  return new Promise<Attempt>((resolve) => {
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(url, {
      method: 'POST', agent: false, lookup: pinned,
      headers: { 'content-type': 'application/json', ...headers, 'content-length': String(Buffer.byteLength(body)), 'user-agent': userAgent },
    }, (res) => {
      let read = 0;
      const kept: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        if (read < KEPT_ANSWER_BYTES) kept.push(chunk.subarray(0, KEPT_ANSWER_BYTES - read));
        read += chunk.length;
        if (read > MAX_ANSWER_BYTES) res.destroy();
      });
      const done = () => {
        clearTimeout(timer);
        const status = res.statusCode ?? null;
        resolve({ status, error: status !== null && status >= 200 && status < 300 ? null : `the receiver answered HTTP ${status}`, answer: Buffer.concat(kept).toString('utf8') });
      };
      res.on('end', done);
      res.on('close', done);
      res.on('error', done);
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${s.timeoutMs / 1000} s`)), s.timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ status: null, error: err.code === undefined ? err.message : `${err.code}: ${err.message}` });
    });
    req.end(body);
  });
}

