// Runs a handler script for one request and renders what it returns: the ScriptRequest it reads
// (query, body, who is asking, warnings, remembered results), and for a script that declares
// itself `cacheable`, its rendered documents kept until the data changes (docs/development.md,
// Remembered results and kept documents).
import path from 'node:path';
import type { CookieOptions, Requester, WrittenMarks } from '../auth/index.ts';
import type { Config } from '../config.ts';
import { projectRoot } from '../config.ts';
import type { Db, ReadRoute, Replicas } from '../db/index.ts';
import { DataVersion, failsOnReplica, ResultCache, unknownPosition } from '../db/index.ts';
import type { BodyReader, Encoding, Exchange, Format, Target } from '../http/index.ts';
import {
  alternatesOf,
  compressBody,
  etagOf,
  NoContent,
  Purger,
  readQuery,
  readUpload,
  Redirect,
  Verbatim,
} from '../http/index.ts';
import type { Logs } from '../log/index.ts';
import type { Outcome, PictureOptions, ScriptModule, ScriptRequest } from '../page/index.ts';
import { allKey, PictureQueue } from '../page/index.ts';
import type { Produced, Templates } from '../render/index.ts';
import { renderDocument, summaryOf } from '../render/index.ts';
import type { RequestSearch, SearchEngine, SearchStats } from '../search/index.ts';
import { limitsOf, SearchClient, Searcher } from '../search/index.ts';
import { parseStack } from './stack.ts';

interface Run {
  name: string;
  script: ScriptModule;
  /** What runs: the script's GET for GET and HEAD, else its POST, PUT or DELETE. */
  handler: (req: ScriptRequest) => Promise<Outcome>;
  /** The method the script runs for, after _method or X-HTTP-Method-Override. */
  method: string;
  format: Format;
  /** The representations the script offers. */
  available: Format[];
  target: Target;
  /** The rewritten query string. */
  query: string;
  body: BodyReader;
  requester: Requester;
}

interface RunnerParts {
  config: Config;
  /** The primary: changes, and every read when there are no replicas. */
  db: Db;
  /** Standbys for the reads of GET and HEAD, and the cookie that keeps a client's own changes in its reads. */
  reads?: { replicas: Replicas; written: WrittenMarks } | null;
  templates: Templates;
  logs: Logs;
}

/** A server's data version and what is kept at it. */
interface Kept {
  version: DataVersion;
  /** Expensive reads scripts remember (req.remember). */
  results: ResultCache;
  /** Rendered documents of cacheable scripts. */
  documents: ResultCache;
  /**
   * The answers of a type of their own (the sitemap's parts, robots.txt, the feeds, the OpenAPI
   * document), in a budget of their own: a crawler walking the sitemap's parts of 3 MB each
   * pushes out none of the pages.
   */
  texts: ResultCache;
}

export class ScriptRunner {
  /**
   * Per server, the primary and each replica: a data version names a state of the data on one
   * server only (a replica replays changes in the order they committed, which the primary may
   * have made visible in another), and a replica behind the primary keeps its own results.
   */
  private readonly kept = new Map<Db, Kept>();

  /**
   * The word index: this process's own, or with workers the search process's (one a server),
   * and the share of connections searches take.
   */
  private readonly searcher: SearchEngine;

  /** Where pictures go, and one queue per process for their conversions. */
  private readonly pictures: PictureOptions;

  /** The caches in front that a change tells what it touched (PURGE_URLS). */
  private readonly purger: Purger;

  constructor(private readonly parts: RunnerParts) {
    const { config, db, logs } = parts;
    this.searcher = config.searchProcess
      ? new SearchClient(config.searchProcess.socket, db, limitsOf(config))
      : new Searcher(db, limitsOf(config), {
          onError: (message) => logs.error(message, { level: 'warn' }),
          snapshot: config.searchSnapshot,
          onNote: (message) => console.log(`portfolio: ${message}`),
        });
    this.pictures = {
      maxPixels: config.pictureMaxPixels,
      maxBytes: config.pictureMaxBytes,
      queue: new PictureQueue({ running: config.pictureConcurrency, waiting: config.pictureQueue }),
    };
    this.purger = new Purger(config.purgeUrls, {
      allKey,
      onFailure: (message) => logs.error(message, { level: 'warn', collapse: true }),
    });
  }

  /** Reads the word index in the background; resolves once it is read (searches are 503 until then). */
  start(): Promise<void> {
    return this.searcher.start();
  }

  /** Stops the search (which writes its snapshot first, when it keeps the index here). */
  close(): Promise<void> {
    this.purger.close();
    return this.searcher.close();
  }

  /** Surrogate keys waiting for a cache in front that has not answered. */
  purgesWaiting(): number {
    return this.purger.waiting();
  }

  searchStats(): SearchStats | Promise<SearchStats> {
    return this.searcher.stats();
  }

  async run(ex: Exchange, run: Run): Promise<Produced> {
    const { config, templates, reads } = this.parts;
    const { name, script, method, format, target, requester } = run;
    const safe = method === 'GET' || method === 'HEAD';
    // A safe request reads where its client's own last change can be seen (lib/db/replicas.ts).
    const cookies = { path: target.basePath + '/', secure: target.secure };
    const route: ReadRoute | null =
      reads && safe ? await reads.replicas.route(reads.written.read(ex.req, cookies)) : null;
    const db = route?.db ?? this.parts.db;
    const server = () => route?.server ?? this.parts.db;
    const keep = () => !route?.mixed;
    const warnings: string[] = [];
    let version: Promise<bigint | null> | null = null;
    // Read once, on the request's server; a replica that fails it sends the request to the primary.
    // A primary that fails it (gone, not yet counted down): null, and the request reads through the
    // route's way out (lib/db/replicas.ts) and keeps nothing.
    const currentVersion = () =>
      (version ??= this.keptOn(server())
        .version.current()
        .catch((err: unknown) => {
          if (!route || !failsOnReplica(err)) throw err;
          if (route.server === this.parts.db) return null;
          route.fallBack();
          return this.keptOn(this.parts.db).version.current();
        }));
    // Only in production: in development an edited script or template shows on the next request.
    const cacheable = script.cacheable === true && safe && config.production;
    const refuse = (): never => {
      throw new Error(
        `scripts/${name}.ts is cacheable, so its document cannot depend on who asks; drop its cacheable export or the call.`,
      );
    };
    // Made when a script searches (most never do). The word index follows the primary: a request
    // that reads there has read its version already.
    let searching: RequestSearch | null = null;
    const search = () =>
      (searching ??= this.searcher.forRequest(
        () => (server() === this.parts.db ? currentVersion() : this.keptOn(this.parts.db).version.current()),
        db,
      ));
    const request: ScriptRequest = {
      method: method === 'HEAD' ? 'GET' : method,
      format,
      query: readQuery(run.query),
      headers: ex.req.headers,
      db,
      link: target.link,
      searcher: {
        find: (spec) => search().find(spec),
        suggest: (conditions, lines) => search().suggest(conditions, lines),
      },
      searchAliases: config.searchViewAliases,
      warn: (message) => {
        warnings.push(message);
        this.warn(ex, message);
      },
      remember: async (key, compute) => {
        const at = await currentVersion();
        return at === null ? compute() : this.keptOn(server()).results.get(at, key, compute, keep);
      },
      identify: () => (cacheable ? refuse() : requester.identify()),
      authenticate: (username, password) => (cacheable ? refuse() : requester.authenticate(username, password)),
      session: cacheable ? refusingSession(refuse) : requester.session,
      body: run.body,
      upload: () => readUpload(ex.req, { dir: config.picturesDir, maxBytes: config.pictureMaxBytes }),
      pictures: this.pictures,
      purge: (keys) => this.purge(keys),
    };
    const produce = async (): Promise<Produced> => {
      let outcome;
      let done = false;
      try {
        outcome = await run.handler(request);
        done = true;
      } catch (err) {
        if (!(err instanceof Redirect)) throw err;
        outcome = err;
        done = true;
      } finally {
        // Session changes travel with whatever answer follows, an error included.
        await requester.settle(ex);
        if (reads && !safe && done) await this.markWritten(ex, cookies, reads);
      }
      if (outcome instanceof Redirect || outcome instanceof NoContent) return outcome;
      if (outcome instanceof Verbatim) {
        const body = Buffer.from(outcome.text);
        return { doc: null, type: outcome.type, keys: outcome.keys, alternates: [], body, etag: etagOf(body) };
      }
      const alternates = alternatesOf(outcome.path, run.available, target.link);
      const text = renderDocument({
        format,
        scriptName: name,
        script,
        doc: outcome,
        link: target.link,
        templates,
        page: {
          title: outcome.title,
          description: format === 'html' && outcome.description !== undefined ? summaryOf(outcome.description) : null,
          base: target.basePath + '/',
          canonical: target.link(outcome.path),
          alternates,
          stylesheet: outcome.stylesheet ?? 'css/site.css',
          warnings: config.displayErrors ? warnings : [],
          user: ex.viewer,
        },
      });
      // Encoded once: the ETag, Content-Length and the socket share the bytes. The data is not
      // needed once rendered, and a kept document would hold it.
      const body = Buffer.from(text);
      return { doc: { ...outcome, data: null }, alternates, body, etag: etagOf(body) };
    };
    // With caches in front to purge, a public answer names the data version it was read at, read
    // before the script reads anything: a cache refuses one older than its last purge, which may
    // have been rendered before the change and arrive after the purge (lib/http/purge.ts).
    const shared = this.parts.config.purgeUrls.length > 0 && safe;
    if (!cacheable) {
      if (!shared) return produce();
      const at = await currentVersion();
      return withVersion(await produce(), at);
    }
    // The origin is one of a few (lib/http/target.ts): a Host cannot make new keys.
    const key = `${name}\u0000${format}\u0000${target.link('')}\u0000${run.query}`;
    const at = await currentVersion();
    if (at === null) return produce();
    const kept = this.keptOn(server());
    const documents = script.only ? kept.texts : kept.documents;
    const keepable = () => warnings.length === 0 && keep();
    const produced = await documents.get(at, key, produce, (p) => 'body' in p && keepable());
    if (!('body' in produced)) return produced;
    // Its compressed bytes are kept beside it, once per encoding, within the same budget.
    const compressed = (encoding: Encoding) =>
      documents.get(at, `${key}\u0000${encoding}`, async () => compressBody(produced.body, encoding), keepable);
    return { ...produced, compressed, version: shared ? at : null };
  }

  /**
   * Purges keys at the caches in front, after a change has committed, with the primary's data
   * version from after it; a version that cannot be read (the primary just failed) leaves the
   * caches' guard where it was, and the keys are purged all the same.
   */
  private async purge(keys: string[]): Promise<void> {
    if (this.parts.config.purgeUrls.length === 0 || keys.length === 0) return;
    const version = await this.keptOn(this.parts.db)
      .version.current()
      .catch(() => 0n);
    await this.purger.purge(keys, version);
  }

  private keptOn(server: Db): Kept {
    let kept = this.kept.get(server);
    if (!kept) {
      // A third each of the process's budget, shared by the primary and every replica.
      const { keptMaxBytes, databaseReplicaUrls } = this.parts.config;
      const limit = Math.floor(keptMaxBytes / 3 / (1 + databaseReplicaUrls.length));
      kept = {
        version: new DataVersion(server),
        results: new ResultCache({ limit, weigh: weighResult }),
        documents: new ResultCache({ limit, weigh: weighKept }),
        texts: new ResultCache({ limit, weigh: weighKept }),
      };
      this.kept.set(server, kept);
    }
    return kept;
  }

  /**
   * After a change: the cookie with the primary's position, so the client's next reads include
   * it. A position that cannot be read is marked unknown, and the client reads from the primary.
   */
  private async markWritten(
    ex: Exchange,
    cookies: CookieOptions,
    reads: NonNullable<RunnerParts['reads']>,
  ): Promise<void> {
    const lsn = await reads.replicas.position().catch(() => unknownPosition);
    ex.res.appendHeader('set-cookie', reads.written.cookie(lsn, cookies));
  }

  /** A recoverable problem a script reports: logged at level warn with the line that called warn(). */
  private warn(ex: Exchange, message: string): void {
    const scripts = this.parts.config.scriptsDir + path.sep;
    const frame = parseStack(new Error(message), projectRoot).find((f) => f.file.startsWith(scripts));
    const where = frame ? ` in ${path.relative(projectRoot, frame.file)} on line ${frame.line}` : '';
    this.parts.logs.error(`Warning: ${message}${where}`, { level: 'warn', client: ex.client.label });
  }
}

/**
 * A remembered result weighs twice its JSON's characters (a string's two bytes, and the objects
 * around the values), and 1 KB for its key: an estimate, so that a stream of large search
 * results stays within the budget; one that cannot be written as JSON weighs 64 KB.
 */
function weighResult(value: unknown): number {
  try {
    return 1024 + 2 * (JSON.stringify(value)?.length ?? 0);
  } catch {
    return 64 * 1024;
  }
}

/** A kept document or compressed body weighs its bytes, and 1 KB for its key and the objects around them. */
function weighKept(value: Produced | Buffer): number {
  return 1024 + (Buffer.isBuffer(value) ? value.length : 'body' in value ? value.body.length : 0);
}

/** A rendered answer with the data version it was read at. */
function withVersion(produced: Produced, version: bigint | null): Produced {
  return 'body' in produced ? { ...produced, version } : produced;
}

function refusingSession(refuse: () => never): ScriptRequest['session'] {
  return {
    expired: refuse,
    csrfToken: refuse,
    checkCsrf: refuse,
    loginToken: refuse,
    checkLoginToken: refuse,
    start: refuse,
    end: refuse,
  };
}
