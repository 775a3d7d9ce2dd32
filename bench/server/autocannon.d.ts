// autocannon ships no types; the part the benches use.
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      setupRequest?: (req: Request, context: Record<string, unknown>) => Request;
      onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
    }
    interface Options {
      url: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      duration?: number;
      connections?: number;
      requests?: Request[];
    }
    interface Histogram { average: number; p50: number; p99: number }
    interface Result { requests: Histogram; latency: Histogram; non2xx: number; errors: number }
  }
  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): unknown;
  export default autocannon;
}
