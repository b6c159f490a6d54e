// Runs a handler script for one request and renders what it returns: the ScriptRequest it reads
// (query, body, who is asking, warnings, remembered results), and for a script that declares
// itself `cacheable`, its rendered documents kept until the data changes (docs/development.md,
// Remembered results and kept documents).
import path from 'node:path';
import type { Requester, WrittenMarks } from '../auth/index.ts';
import type { Config } from '../config.ts';
import { projectRoot } from '../config.ts';
import type { Db, Replicas } from '../db/index.ts';
import { DataVersion, ResultCache } from '../db/index.ts';
import type { BodyReader, Exchange, Format, Target } from '../http/index.ts';
import { alternatesOf, etagOf, NoContent, Redirect } from '../http/index.ts';
import type { Logs } from '../log/index.ts';
import type { Outcome, ScriptModule, ScriptRequest } from '../page/index.ts';
import type { Produced, Templates } from '../render/index.ts';
import { renderDocument } from '../render/index.ts';
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

export class ScriptRunner {
  /** Each database's data version: a replica's may be behind the primary's. */
  private readonly versions = new Map<Db, DataVersion>();
  /** Expensive reads scripts remember (req.remember). */
  private readonly results = new ResultCache();
  // Search pages run 3 to 10 KB, so 500 rendered documents stay within a few MB.
  private readonly documents = new ResultCache({ limit: 500 });

  constructor(private readonly parts: RunnerParts) {}

  async run(ex: Exchange, run: Run): Promise<Produced> {
    const { config, templates, reads } = this.parts;
    const { name, script, method, format, target, requester } = run;
    const safe = method === 'GET' || method === 'HEAD';
    // A safe request reads where its client's own last change can be seen (lib/db/replicas.ts).
    const db = reads && safe ? await reads.replicas.reader(reads.written.read(ex.req)) : this.parts.db;
    const warnings: string[] = [];
    let version: Promise<bigint> | null = null;
    const currentVersion = () => (version ??= this.versionOf(db).current());
    // Only in production: in development an edited script or template shows on the next request.
    const cacheable = script.cacheable === true && safe && config.production;
    const refuse = (): never => {
      throw new Error(`scripts/${name}.ts is cacheable, so its document cannot depend on who asks; drop its cacheable export or the call.`);
    };
    const request: ScriptRequest = {
      method: method === 'HEAD' ? 'GET' : method,
      format,
      query: new URLSearchParams(run.query),
      headers: ex.req.headers,
      db,
      link: target.link,
      warn: (message) => {
        warnings.push(message);
        this.warn(ex, message);
      },
      remember: async (key, compute) => this.results.get(await currentVersion(), key, compute),
      identify: () => (cacheable ? refuse() : requester.identify()),
      authenticate: (username, password) => (cacheable ? refuse() : requester.authenticate(username, password)),
      session: cacheable ? refusingSession(refuse) : requester.session,
      body: run.body,
    };
    const produce = async (): Promise<Produced> => {
      let outcome;
      try {
        outcome = await run.handler(request);
      } catch (err) {
        if (!(err instanceof Redirect)) throw err;
        outcome = err;
      } finally {
        // Session changes travel with whatever answer follows, an error included.
        await requester.settle(ex);
        if (reads && !safe) await this.markWritten(ex, target, reads);
      }
      if (outcome instanceof Redirect || outcome instanceof NoContent) return outcome;
      const alternates = alternatesOf(outcome.path, run.available, target.link);
      const text = renderDocument({
        format, scriptName: name, script, doc: outcome, link: target.link, templates,
        page: {
          title: outcome.title, base: target.basePath + '/', canonical: target.link(outcome.path), alternates,
          stylesheet: outcome.stylesheet ?? 'css/site.css', warnings: config.displayErrors ? warnings : [], user: ex.viewer,
        },
      });
      // Encoded once: the ETag, Content-Length and the socket share the bytes.
      const body = Buffer.from(text);
      return { doc: outcome, alternates, body, etag: etagOf(body) };
    };
    if (!cacheable) return produce();
    const key = `${name}\u0000${format}\u0000${target.link('')}\u0000${run.query}`;
    return this.documents.get(await currentVersion(), key, produce, (p) => 'body' in p && warnings.length === 0);
  }

  private versionOf(db: Db): DataVersion {
    let version = this.versions.get(db);
    if (!version) this.versions.set(db, (version = new DataVersion(db)));
    return version;
  }

  /** After a change: the cookie with the primary's position, so the client's next reads include it. */
  private async markWritten(ex: Exchange, target: Target, reads: NonNullable<RunnerParts['reads']>): Promise<void> {
    try {
      const lsn = await reads.replicas.position();
      ex.res.appendHeader('set-cookie', reads.written.cookie(lsn, { path: target.basePath + '/', secure: target.secure }));
    } catch {
      // The primary is gone: the change failed with it, and its answer says so.
    }
  }

  /** A recoverable problem a script reports: logged at level warn with the line that called warn(). */
  private warn(ex: Exchange, message: string): void {
    const scripts = this.parts.config.scriptsDir + path.sep;
    const frame = parseStack(new Error(message), projectRoot).find((f) => f.file.startsWith(scripts));
    const where = frame ? ` in ${path.relative(projectRoot, frame.file)} on line ${frame.line}` : '';
    this.parts.logs.error(`Warning: ${message}${where}`, { level: 'warn', client: ex.client.label });
  }
}

function refusingSession(refuse: () => never): ScriptRequest['session'] {
  return { expired: refuse, csrfToken: refuse, checkCsrf: refuse, loginToken: refuse, checkLoginToken: refuse, start: refuse, end: refuse };
}
