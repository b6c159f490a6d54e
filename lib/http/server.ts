// The configured node:http server, the one place that sets how long and how much a client may
// send: production, the worker processes and the tests all listen through it.
// Requests the parser refuses (slow, oversized, malformed) are answered and logged as Apache does.
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import net from 'node:net';
import type { Socket } from 'node:net';
import type { AccessEntry } from '../log/index.ts';
import { securityHeaders } from './respond.ts';

export interface ServerLimits {
  /** All headers must arrive within this time, or 408 (slowloris). */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this time, or 408. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this time. */
  keepAliveTimeoutMs: number;
  /** Request line and headers together; beyond it 431 (or 414 when the request line alone is too long). */
  maxHeaderBytes: number;
}

const defaultLimits: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxHeaderBytes: 16 * 1024,
};

export interface Served {
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  logAccess: (entry: AccessEntry) => void;
}

// Node checks the two time-outs only this often (its default is 30 s, which would let a slow
// client hold a connection for up to 40 s instead of 10).
const checkEveryMs = 1000;
// As the front's limit on the request target (414) and Apache's LimitRequestLine.
const maxLoggedRequestLine = 8192;

export function createHttpServer(app: Served, limits: Partial<ServerLimits> = {}): http.Server {
  const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, maxHeaderBytes } = { ...defaultLimits, ...limits };
  const server = http.createServer(
    {
      headersTimeout: headersTimeoutMs,
      requestTimeout: requestTimeoutMs,
      keepAliveTimeout: keepAliveTimeoutMs,
      maxHeaderSize: maxHeaderBytes,
      connectionsCheckingInterval: Math.min(checkEveryMs, headersTimeoutMs),
    },
    (req, res) => {
      // Once stopping (SIGTERM), every answer closes its connection, so no client sends another
      // request on a connection that is about to go away.
      if (draining.has(server)) res.setHeader('connection', 'close');
      app.handle(req, res);
    },
  );
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
    answerClientError(err, socket, app.logAccess);
  });
  return server;
}

/**
 * Stops accepting connections without cutting a keep-alive connection between two requests:
 * its next request is still answered, with `Connection: close`, and a connection that stays idle
 * ends after keepAliveTimeout. http.Server's own close() drops idle connections at once, and a
 * client that is just sending its next request on one sees ECONNRESET (test/robustness/graceful-stop.test.ts).
 * onClosed runs once the last connection has ended.
 */
export function stopAccepting(server: http.Server, onClosed: () => void): void {
  drain(server);
  net.Server.prototype.close.call(server, () => onClosed());
}

// Servers that are stopping: each of their answers closes its connection.
const draining = new WeakSet<http.Server>();

/** From now on every answer of the server says Connection: close. */
export function drain(server: http.Server): void {
  draining.add(server);
}

const lingerMs = 1000;
const lingerBytes = 4 * 1024 * 1024;

/**
 * Apache's lingering close, for an answer that ends a connection while the client is still
 * sending its body (413): the connection is half-closed after the answer and what still arrives
 * is read and dropped for up to a second or 4 MiB. Closed at once, the server's kernel would
 * answer the next bytes with a reset, and a client still writing could lose the answer unread.
 */
export function lingerAfterAnswer(req: IncomingMessage): void {
  if (req.complete) return;
  const socket = req.socket as Socket & { destroySoon?: () => void };
  // http.Server calls destroySoon() once an answer with Connection: close is written.
  socket.destroySoon = () => {
    let taken = 0;
    const cut = () => socket.destroy();
    const timer = setTimeout(cut, lingerMs);
    socket.once('close', () => clearTimeout(timer));
    // The HTTP parser keeps reading the body and drops it (the request is not consumed).
    socket.on('data', (chunk: Buffer) => {
      taken += chunk.length;
      if (taken > lingerBytes) cut();
    });
    socket.end();
  };
}

const securityLines = Object.entries(securityHeaders)
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');

/**
 * What node's default clientError handler does, plus the access-log line Apache writes for a
 * request it refuses: the request line as received, escaped, with the status.
 */
function answerClientError(
  err: NodeJS.ErrnoException & { rawPacket?: Buffer },
  socket: Socket,
  logAccess: Served['logAccess'],
): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  // A response already under way on this socket cannot be followed by another.
  const busy = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (busy?.headersSent) {
    socket.destroy();
    return;
  }
  const requestLine = requestLineOf(err.rawPacket);
  const status = statusOf(err.code, err.rawPacket);
  const reason = http.STATUS_CODES[status] ?? 'Bad Request';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n${securityLines}\r\n`);
  socket.destroySoon();
  logAccess({
    remoteAddr: socket.remoteAddress?.replace(/^::ffff:/, '') ?? '-',
    user: null,
    time: new Date(),
    method: '',
    target: '',
    httpVersion: '',
    requestLine,
    status,
    bytes: 0,
    referer: undefined,
    userAgent: undefined,
  });
}

function statusOf(code: string | undefined, packet: Buffer | undefined): number {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  if (code === 'HPE_HEADER_OVERFLOW') {
    // Still inside the request line: the address is what is too long (Apache's LimitRequestLine).
    const text = packet?.toString('latin1') ?? '';
    const lineEnd = text.indexOf('\n');
    return /^[A-Z]+ \//.test(text) && (lineEnd === -1 || lineEnd > maxLoggedRequestLine) ? 414 : 431;
  }
  return 400;
}

/** The first line of what the client sent, as bytes in latin1 (how the access log escapes them); "-" for nothing. */
function requestLineOf(packet: Buffer | undefined): string {
  if (!packet || packet.length === 0) return '-';
  const text = packet.subarray(0, maxLoggedRequestLine).toString('latin1');
  const end = text.search(/\r?\n/);
  return end === -1 ? text : text.slice(0, end);
}
