// Forwards what a rewrite rule with flag P sends to another server (mod_proxy's [P]), so an
// old site keeps serving the pages not yet migrated. Method, headers and body stream both ways
// through http-proxy-3; a refused or reset upstream is 502, a silent one 504 (RFC 9110 15.6.3, 15.6.5).
import type { IncomingMessage } from 'node:http';
import { ProxyServer } from 'http-proxy-3';
import { HttpError } from './http-error.ts';
import type { Exchange } from './respond.ts';

/** An upstream that failed: the client reads a short message, the error log the cause. */
export class UpstreamError extends HttpError {
  override name = 'ProxyError';
  readonly logMessage: string;

  constructor(status: 502 | 504, options: { message: string; logMessage: string; cause: unknown }) {
    super(status, options.message, { cause: options.cause });
    this.logMessage = options.logMessage;
  }
}

// Thrown into the upstream request when it stays silent, so the callback can tell 504 from 502.
class UpstreamTimeout extends Error {
  override name = 'UpstreamTimeout';
}

interface Proxy {
  /** Streams the exchange to url and back; resolves when the response is complete. */
  forward(ex: Exchange, url: string): Promise<void>;
}

export function createProxy(options: { timeoutMs: number }): Proxy {
  // The old site keeps the public Host it served before the move (Apache's ProxyPreserveHost On),
  // so the links it builds from $_SERVER['HTTP_HOST'] stay public. ignorePath: the target is the whole URL.
  const proxy = new ProxyServer({ xfwd: true, changeOrigin: false, ignorePath: true });
  const exchanges = new WeakMap<IncomingMessage, Exchange>();

  // Like Apache's ProxyTimeout: the time the upstream may stay silent, before or during its answer.
  proxy.on('proxyReq', (proxyReq) => {
    proxyReq.setTimeout(options.timeoutMs, () => {
      proxyReq.destroy(new UpstreamTimeout(`no answer within ${options.timeoutMs} ms`));
    });
  });
  // The access log's %b: the body bytes passed on to the client.
  proxy.on('proxyRes', (proxyRes, req) => {
    const ex = exchanges.get(req);
    if (ex && req.method !== 'HEAD')
      proxyRes.on('data', (chunk: Buffer) => {
        ex.bytes += chunk.length;
      });
  });
  // Every call passes its own callback; without this listener a stray error would end the process.
  proxy.on('error', () => {});

  return {
    forward(ex, url) {
      const { req, res } = ex;
      exchanges.set(req, ex);
      // Node has already answered "100 Continue" to the client; the upstream must not wait for a second one.
      delete req.headers.expect;
      return new Promise((resolve, reject) => {
        res.once('close', () => resolve());
        proxy.web(req, res, { target: url }, (err) => reject(describeFailure(err, url, options.timeoutMs)));
      });
    },
  };
}

function describeFailure(err: Error, url: string, timeoutMs: number): UpstreamError {
  const upstream = new URL(url).origin;
  if (err instanceof UpstreamTimeout) {
    return new UpstreamError(504, {
      message: 'The server behind this address did not answer in time; please try again later.',
      logMessage: `Proxy error: ${upstream} did not answer ${url} within ${timeoutMs} ms (PROXY_TIMEOUT_MS)`,
      cause: err,
    });
  }
  const code = (err as NodeJS.ErrnoException).code;
  const what =
    code === 'ECONNREFUSED' ? 'refused the connection' : code === 'ECONNRESET' ? 'closed the connection' : 'failed';
  return new UpstreamError(502, {
    message: 'The server behind this address is not reachable at the moment; please try again later.',
    logMessage: `Proxy error: ${upstream} ${what} for ${url} (${code ?? err.message})`,
    cause: err,
  });
}
