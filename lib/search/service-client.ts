// A worker's side of the search process (service.ts): its searches go over the Unix socket, on
// connections kept open; the closest spellings of a search without hits are asked of the
// database here, as the one process does (suggest.ts). While the search process cannot be
// reached (it starts, or starts again after it died), a search is 503 with Retry-After.
import http from 'node:http';
import type { Db } from '../db/index.ts';
import { HttpError } from '../http/index.ts';
import type { Searched, Stems, Wanted } from './searcher.ts';
import { indexNotRead, requestSearch } from './searcher.ts';
import type { Carried, Question } from './service.ts';
import { uncarry } from './service.ts';
import type { RequestSearch, SearchEngine, SearchLimits, SearchSpec, SearchStats } from './spec.ts';
import { Turns } from './turns.ts';

/** Searches of one worker on their way to the search process at once; more wait for a connection. */
const maxConnections = 64;
/** What a search may take in the search process beyond its own bounds before the worker gives up. */
const marginMs = 5000;
/** How long a metrics scrape waits for the search process's figures before it takes the last ones. */
const statsMs = 1000;
/** A connection unused this long is closed, well before the search process closes it (60 s). */
const idleMs = 30_000;

const noStats: SearchStats = {
  personen: 0,
  werke: 0,
  bytes: 0,
  searches: 0,
  catchUps: 0,
  reloads: 0,
  snapshotsTaken: 0,
  snapshotsWritten: 0,
};

export class SearchClient implements SearchEngine {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: maxConnections, timeout: idleMs });
  private readonly turns: Turns;
  private counted: { at: number; stats: Promise<SearchStats> } | null = null;
  private lastStats: SearchStats = noStats;

  /** socket: where the search process listens; primary: the database whose changes its index follows. */
  constructor(
    private readonly socket: string,
    private readonly primary: Db,
    private readonly limits: SearchLimits,
  ) {
    this.turns = new Turns(limits);
  }

  /** The worker keeps no index: it serves searches at once, from the search process. */
  start(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }

  /**
   * The search process's figures, asked at most once a second; the last ones while it does not
   * answer within a second (busy with searches, or starting), zeros before it ever has.
   */
  stats(): Promise<SearchStats> {
    if (!this.counted || Date.now() - this.counted.at > 1000) {
      const asked = this.ask<SearchStats>('GET', '/stats', null, true, statsMs).then(
        (stats) => (this.lastStats = stats),
        () => this.lastStats,
      );
      this.counted = { at: Date.now(), stats: asked };
    }
    return this.counted.stats;
  }

  /** The search one request runs (requestSearch in searcher.ts), on the search process's index. */
  forRequest(version: () => Promise<bigint | null>, db: Db): RequestSearch {
    return requestSearch({
      primary: this.primary,
      db,
      version,
      turns: this.turns,
      timeoutMs: this.limits.timeoutMs,
      stemsHere: true,
      search: (spec, wanted, stems) => this.find(spec, wanted, stems),
    });
  }

  private find(spec: SearchSpec, wanted: Wanted, stems: Stems | null): Promise<Searched> {
    const version = typeof wanted === 'bigint' ? String(wanted) : wanted;
    return this.ask<Searched>('POST', '/find', { spec, version, stems } satisfies Question);
  }

  private ask<T>(
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    again = true,
    timeoutMs = this.limits.timeoutMs + this.limits.waitMs + marginMs,
  ): Promise<T> {
    const text = body === null ? undefined : JSON.stringify(body);
    return new Promise<T>((resolve, reject) => {
      const req = http.request(
        {
          // The figures on a connection of their own: they wait for no search.
          socketPath: this.socket,
          agent: method === 'GET' ? false : this.agent,
          method,
          path,
          timeout: timeoutMs,
          headers:
            text === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', () => reject(indexNotRead()));
          res.on('end', () => {
            try {
              const value = JSON.parse(Buffer.concat(chunks).toString('utf8')) as T | Carried;
              if (res.statusCode !== 200) return reject(uncarry(value as Carried));
              resolve(value as T);
            } catch {
              reject(indexNotRead());
            }
          });
        },
      );
      // Not listening yet (ENOENT, ECONNREFUSED), or gone while it answered (ECONNRESET). A
      // kept connection the search process closed as it was reused is tried once more, anew.
      let timedOut = false;
      req.on('error', () => {
        if (again && req.reusedSocket && !timedOut)
          this.ask<T>(method, path, body, false, timeoutMs).then(resolve, reject);
        else reject(indexNotRead());
      });
      req.on('timeout', () => {
        timedOut = true;
        req.destroy();
        reject(
          new HttpError(503, 'The search took too long; try again in a moment.', { headers: { 'retry-after': '5' } }),
        );
      });
      req.end(text);
    });
  }
}
