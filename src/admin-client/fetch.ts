/**
 * `localhostFetch` is a fetch that resolves `*.localhost` to loopback itself (RFC 6761 §6.3, as
 * browsers do), so tenant hosts work even where the system resolver does not know them (no
 * libnss-myhostname). It speaks http and https via node:http(s) and never follows redirects on
 * its own (`redirect: 'manual'` semantics), which is what a relying party library needs.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isLocalHost } from '../contract/hosts.ts';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

function lookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  if (isLocalHost(hostname)) {
    if (options.all) return callback(null, [{ address: '127.0.0.1', family: 4 }]);
    return callback(null, '127.0.0.1', 4);
  }
  dnsLookup(hostname, options, callback as never);
}

export async function localhostFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = new URL(input instanceof Request ? input.url : input);
  const headers = new Headers(input instanceof Request ? input.headers : undefined);
  new Headers(init.headers).forEach((v, k) => headers.set(k, v));
  const method = init.method ?? (input instanceof Request ? input.method : 'GET');
  let body: Buffer | undefined;
  const raw = init.body ?? (input instanceof Request && input.body !== null ? await input.arrayBuffer() : undefined);
  if (raw !== undefined && raw !== null) {
    if (typeof raw === 'string') body = Buffer.from(raw);
    else if (raw instanceof URLSearchParams) {
      body = Buffer.from(raw.toString());
      if (!headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
    } else if (raw instanceof ArrayBuffer || ArrayBuffer.isView(raw)) body = Buffer.from(raw as ArrayBuffer);
    else body = Buffer.from(await new Response(raw as BodyInit).arrayBuffer());
  }
  if (body !== undefined) headers.set('content-length', String(body.length));
  const outgoing: Record<string, string> = {};
  headers.forEach((v, k) => {
    outgoing[k] = v;
  });
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<Response>((resolve, reject) => {
    const req = request(url, {
      method, headers: outgoing, lookup, signal: init.signal ?? undefined,
      // No connection pooling: a pooled socket to a server that restarted fails with 'socket hang up'.
      agent: false,
    }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          if (Array.isArray(v)) for (const x of v) h.append(k, x);
          else if (v !== undefined) h.set(k, v);
        }
        const status = res.statusCode ?? 500;
        const nullBody = status === 204 || status === 304 || method === 'HEAD';
        const response = new Response(nullBody ? null : Buffer.concat(chunks), { status, headers: h });
        Object.defineProperty(response, 'url', { value: url.href });
        resolve(response);
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
