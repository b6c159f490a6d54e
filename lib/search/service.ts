// The search process: with WEB_CONCURRENCY of 2 or more, the one process of a server that keeps
// the word index (searcher.ts). The primary starts it beside the workers and starts it again when it
// dies; the workers ask it over a Unix socket (service-client.ts), in HTTP: POST /find with a search and
// the data version it must see, GET /stats for the metrics. docs/operations.md, Processes and signals.
import { chmodSync, renameSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { Db } from '../db/index.ts';
import { DbInputError, DbUnavailableError } from '../db/index.ts';
import { HttpError } from '../http/index.ts';
import type { Searched, Stems, Wanted } from './searcher.ts';
import { Searcher } from './searcher.ts';
import type { SearchLimits, SearchSpec } from './spec.ts';

/** A question's body at most: a search is a few lines of 200 characters and its facets. */
const maxQuestionBytes = 256 * 1024;

/** What a worker sends to /find; stems: of the search's words, read where the request reads, when the primary cannot be asked. */
export interface Question {
  spec: SearchSpec;
  version: string | null | 'latest';
  stems: Stems | null;
}

/** A stem as long as any a word of a search may have: a term is 200 characters at most. */
const maxStemLength = 200;

/** Stems as a worker sends them, each a string or null; anything else is left out (the primary is asked then). */
function stemsOf(value: unknown): Stems | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const entries = Object.entries(value).filter(
    ([, stem]) => stem === null || (typeof stem === 'string' && stem.length <= maxStemLength),
  );
  return Object.fromEntries(entries) as Stems;
}

/** An error of the search, as it travels to the worker that asked (service-client.ts makes it again). */
export interface Carried {
  kind: 'http' | 'unavailable' | 'input' | 'error';
  status: number;
  message: string;
  headers?: Record<string, string>;
}

export function carry(err: unknown): Carried {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof HttpError) return { kind: 'http', status: err.status, message, headers: err.options.headers };
  if (err instanceof DbUnavailableError) return { kind: 'unavailable', status: 503, message };
  if (err instanceof DbInputError) return { kind: 'input', status: 400, message };
  return { kind: 'error', status: 500, message };
}

export function uncarry(carried: Carried): Error {
  switch (carried.kind) {
    case 'http':
      return new HttpError(carried.status, carried.message, { headers: carried.headers });
    case 'unavailable':
      return new DbUnavailableError(carried.message);
    case 'input':
      return new DbInputError(carried.message);
    default:
      return new Error(`the search process: ${carried.message}`);
  }
}

function wantedOf(version: Question['version']): Wanted {
  return version === null || version === 'latest' ? version : BigInt(version);
}

function send(res: http.ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Answers the workers' questions on the searcher's index. */
export function serveSearches(searcher: Searcher): http.Server {
  return http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    if (req.method === 'GET' && req.url === '/stats') return send(res, 200, searcher.stats());
    if (req.method !== 'POST' || req.url !== '/find')
      return send(res, 404, carry(new HttpError(404, `no ${req.method} ${req.url}`)));
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxQuestionBytes) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > maxQuestionBytes) return send(res, 413, carry(new HttpError(413, 'The search is too large.')));
      let question: Question;
      let wanted: Wanted;
      let stems: Stems | null;
      try {
        question = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Question;
        wanted = wantedOf(question.version);
        stems = stemsOf(question.stems);
      } catch {
        return send(res, 400, carry(new HttpError(400, 'The search could not be read.')));
      }
      searcher.search(question.spec, wanted, undefined, stems).then(
        (searched: Searched) => send(res, 200, searched),
        (err: unknown) => {
          const carried = carry(err);
          send(res, carried.status, carried);
        },
      );
    });
  });
}

export interface ServiceOptions {
  socket: string;
  limits: SearchLimits;
  onError: (message: string) => void;
  /** The index's snapshot file; null: none. */
  snapshot: string | null;
  /** Once the index is read: the primary hears it. */
  onComplete: () => void;
  reopenLogs: () => void;
}

/**
 * Runs the search process until the primary tells it to stop: it reads the index, then answers
 * on the socket and follows the database's changes. SIGHUP reopens its logs; SIGUSR2, the
 * primary's, is not for it.
 */
export async function runSearchService(db: Db, options: ServiceOptions): Promise<void> {
  const searcher = new Searcher(db, options.limits, {
    onError: options.onError,
    snapshot: options.snapshot,
    onNote: (message) => console.log(`portfolio: ${message}`),
  });
  const server = serveSearches(searcher);
  // It listens under a name of its own and takes the socket's name once its index is read: the
  // workers' next connections come here, while one it replaces (a reload) answers until then.
  const own = `${options.socket}.${process.pid}`;
  rmSync(own, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // Its own socket, not one the cluster's primary listens on and hands connections from.
    server.listen({ path: own, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Only this user's processes may ask (the folder is the primary's own, 0700, as well).
  chmodSync(own, 0o600);
  server.on('error', (err) => options.onError(`search process: ${err.message}`));
  let stopping = false;
  // The searches under way are answered first (at most 5 s), then the snapshot is written and the
  // database closed.
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.close(() => {
      void searcher
        .close()
        .finally(() => db.close())
        .finally(() => process.exit(0));
    });
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 5000).unref();
  };
  // The primary says when, after its workers have finished their requests; a SIGTERM sent to
  // the whole group (systemctl stop) must not end the searches of those requests first. Without
  // a primary (it is gone), a signal or the channel's end stops it.
  process.on('message', (message: { portfolio?: string }) => {
    if (message?.portfolio === 'stop') stop();
  });
  process.on('disconnect', stop);
  const signalled = () => {
    if (!process.connected) stop();
  };
  process.on('SIGTERM', signalled);
  process.on('SIGINT', signalled);
  process.on('SIGHUP', () => options.reopenLogs());
  process.on('SIGUSR2', () => undefined);
  void searcher.start().then(() => {
    if (stopping) return;
    renameSync(own, options.socket);
    const { personen, werke } = searcher.stats();
    console.log(`portfolio: search process ${process.pid} answers searches (${personen} persons, ${werke} works)`);
    options.onComplete();
  });
}
