// The front: every request goes through handle() in the numbered steps of dispatch(), each one
// call into lib/ (docs/development.md, How a request is served). It listens only when run as the
// program (`npm start`, `npm run dev`); tests call createApp and handle without a port.
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import createDebug from 'debug';
import { Auth } from './lib/auth/index.ts';
import type { Config } from './lib/config.ts';
import { projectRoot, readConfig } from './lib/config.ts';
import type { Db } from './lib/db/index.ts';
import { openDatabase, openReplicas, prepareDatabase } from './lib/db/index.ts';
import type { Exchange } from './lib/http/index.ts';
import {
  accessEntryOf,
  basePathOf,
  chooseFormat,
  compileTrust,
  createBodyReader,
  createExchange,
  createProxy,
  effectiveMethod,
  HttpError,
  lingerAfterAnswer,
  listen,
  locate,
  locationHeader,
  mediaTypes,
  negotiateErrorFormat,
  noBody,
  picturesPath,
  possibleMethods,
  readTarget,
  refuseLargeBody,
  runPrimary,
  runsWorkers,
  sendBody,
  sendEmpty,
  StaticFiles,
  UpstreamError,
} from './lib/http/index.ts';
import type { AccessEntry } from './lib/log/index.ts';
import { Logs } from './lib/log/index.ts';
import { clusterMetrics, foldMetrics, Metrics, Probes } from './lib/ops/index.ts';
import { admitChange, pictureSource } from './lib/page/index.ts';
import { formatsOf, problemOf, renderProblem, respond, Templates } from './lib/render/index.ts';
import { loadRules, rewriteRequest } from './lib/rewrite/index.ts';
import { scriptOf } from './lib/script-name.ts';
import { limitsOf, runSearchService } from './lib/search/index.ts';
import { describeError, errorPagePolicy, renderErrorPage, ScriptLoader, ScriptRunner } from './lib/scripts/index.ts';

const traceRequest = createDebug('portfolio:request');

export interface App {
  config: Config;
  db: Db;
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  /** Resolves once the search index is read; the app serves before, and searches meanwhile are 503. */
  complete: Promise<void>;
  /** Access-log line for a request the HTTP parser refused before it reached handle. */
  logAccess: (entry: AccessEntry) => void;
  /** Error-log line for a problem outside any request (start-up, database pool). */
  logError: (message: string, level?: 'error' | 'warn') => void;
  reopenLogs: () => void;
  close: () => Promise<void>;
}

export async function createApp(config: Config, options: { db?: Db } = {}): Promise<App> {
  const logs = new Logs({ access: config.accessLog, error: config.errorLog });
  const logError: App['logError'] = (message, level = 'error') => logs.error(message, { level });
  const reload = !config.production;
  const templates = new Templates(config.templatesDir, { reload });
  // Checked before the first request: a missing scripts folder, a bad rewrite table, database or
  // migration stops the start, and the error log says why, where an operator looks first.
  const { scripts, rules, db } = await prepare(config, { db: options.db, logError }).catch(async (err: unknown) => {
    logError(`portfolio could not start: ${err instanceof Error ? err.message : String(err)}`);
    await logs.close();
    throw err;
  });
  const auth = await Auth.open(db, config, logs);
  const replicas = openReplicas(config, db, { onWarning: (message) => logError(message, 'warn') });
  await replicas?.start();
  // The pictures are in the database; the folder keeps a copy of each one served.
  const files = new StaticFiles(config.publicDir, {
    mounts: [{ prefix: picturesPath, dir: config.picturesDir, immutable: true, fetch: pictureSource(db, replicas) }],
  });
  const runner = new ScriptRunner({
    config,
    db,
    reads: replicas && { replicas, written: auth.written },
    templates,
    logs,
  });
  // Read in the background: the probes and the pages answer from the start (docs/operations.md).
  const complete = runner.start();
  const proxy = createProxy({ timeoutMs: config.proxyTimeoutMs });
  const site = { publicDir: config.publicDir, scriptExists: (name: string) => scripts.exists(name) };
  const base = `${basePathOf(config)}/`;
  const trust = compileTrust(config.trustedProxies);
  const metrics = new Metrics({
    db,
    logFailedWrites: () => logs.failedWrites(),
    logins: auth.tally,
    checksWaiting: () => auth.checksWaiting,
    countSessions: () => auth.countSessions(),
    replicas: replicas ? () => replicas.status() : undefined,
    search: () => runner.searchStats(),
    purgesWaiting: () => runner.purgesWaiting(),
  });
  const probes = new Probes(config, db, metrics);
  let forwardingWarned = 0;

  async function dispatch(ex: Exchange): Promise<void> {
    const { req } = ex;
    traceRequest('%s %s', req.method, req.url);
    // 1. Target: the decoded path and query, the representation suffix, the origin of links.
    const target = readTarget(ex, config, { suffixes: rules.representationSuffixes });
    // 2. Rewrite: the first matching rules decide; F and G end here (403, 410).
    const destination = rewriteRequest(rules, ex, target, site);
    ex.route = destination.kind;
    if (destination.kind === 'redirect')
      return sendEmpty(ex, destination.status, {
        location: locationHeader(locate(target, destination.location, target.suffix)),
      });
    // 3. Proxy, file or script: a P rule's upstream, a file of public/, or scripts/<name>.ts for /<name>.php.
    if (destination.kind === 'proxy') return proxy.forward(ex, destination.url);
    refuseLargeBody(req, config.pictureMaxBytes);
    const name = scriptOf(destination.path);
    if (name === null || !scripts.exists(name)) {
      ex.route = 'static';
      if (
        (req.method === 'GET' || req.method === 'HEAD') &&
        (await files.serve(ex, destination.rule === null ? target.path : destination.path))
      )
        return;
      logs.missingFile(path.join(config.publicDir, target.path), ex.client.label);
      throw new HttpError(404, `There is no document at ${target.path}.`);
    }
    ex.route = name;
    const script = await scripts.load(name);
    // 4. Method and body: OPTIONS answers itself; a change from another site, or from someone
    //    who may change nothing, is refused before its body is read; a form may ask for PUT or
    //    DELETE (_method). 405 lists what there is.
    const allow = allowedMethods(script);
    if (req.method === 'OPTIONS') return sendEmpty(ex, 204, { allow: allow.join(', ') });
    // Who is asking is read only if the script or a change asks; public documents never do.
    const requester = auth.requester(ex, target);
    // GET and HEAD have no body to read and no other method to ask for.
    let body = noBody;
    let method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') {
      if (!possibleMethods(req).some((m) => allow.includes(m))) throw notAllowed(method, allow);
      body = createBodyReader(req, await admitChange(req, target, requester, script));
      method = await effectiveMethod(req, body);
    }
    const handler =
      method === 'GET' || method === 'HEAD'
        ? script.GET
        : allow.includes(method)
          ? script[method as 'POST' | 'PUT' | 'DELETE']
          : undefined;
    if (!handler) throw notAllowed(method, allow);
    // 5. Representation: the suffix, or Accept; 406 lists the alternatives.
    const available = formatsOf(script);
    // Before the script has run, the address asked for, with its query, is the best name of the document.
    const guess = target.query ? `${target.bare}?${target.query}` : target.bare;
    const format =
      script.only && target.suffix === null
        ? script.only.format
        : chooseFormat({
            suffix: target.suffix,
            accept: req.headers.accept,
            available,
            path: guess,
            link: target.link,
          });
    // 6. Identity: the requester of step 4, read only if the script or a change asks.
    // 7. Run the script and render its answer (8), or take the rendering kept at this data version.
    const produced = await runner.run(ex, {
      name,
      script,
      handler,
      method,
      format,
      available,
      target,
      query: destination.query,
      body,
      requester,
    });
    // 9. Respond: redirect, 204, or the representation with its ETag, links and caching.
    const answer = { format, target, personal: requester.asked, type: script.only?.type };
    await respond(ex, produced, { ...answer, sharedSeconds: config.sharedCacheSeconds });
  }

  /** The one catch: an HttpError (or an outage) as a page or problem details, anything else 500. */
  function answerError(ex: Exchange, err: unknown): void {
    const { req, res } = ex;
    const problem = problemOf(err);
    if (!problem || problem.status >= 500 || res.headersSent) logFailure(ex, err);
    else if (problem.options.log)
      logs.error(`${problem.message} (${problem.status})`, {
        level: problem.options.log,
        client: ex.client.label,
        collapse: true,
      });
    if (res.headersSent) return void res.destroy();
    if (problem) {
      const { headers, body } = renderProblem(problem, ex.suffix ?? negotiateErrorFormat(req.headers.accept), {
        templates,
        base,
        user: ex.viewer,
      });
      if (headers.connection === 'close') lingerAfterAnswer(req);
      return sendBody(ex, problem.status, headers, body);
    }
    // In production a 500 delivers no content; display_errors shows PHP's error page.
    if (config.displayErrors) {
      const headers = {
        'content-type': mediaTypes.html,
        'cache-control': 'no-store',
        'content-security-policy': errorPagePolicy,
      };
      return sendBody(ex, 500, headers, renderErrorPage(err, req, projectRoot));
    }
    sendEmpty(ex, 500, { 'cache-control': 'no-store' });
  }

  function logFailure(ex: Exchange, err: unknown): void {
    const message = err instanceof UpstreamError ? err.logMessage : describeError(err, projectRoot);
    logs.error(message, { client: ex.client.label, referer: ex.req.headers.referer, collapse: true });
  }

  /** A trusted proxy's forwarding header that could not be read: ignored, and said at most once a minute. */
  function warnForwarding(ex: Exchange): void {
    if (Date.now() - forwardingWarned < 60_000) return;
    forwardingWarned = Date.now();
    logs.error(`${ex.client.malformed}; the socket's address is used (said at most once a minute)`, {
      level: 'warn',
      client: ex.client.label,
    });
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const ex = createExchange(req, res, trust);
    const started = performance.now();
    if (ex.client.malformed) warnForwarding(ex);
    // 0. Probes (/healthz, /readyz, /metrics) come before the Host check and stay out of the access log.
    const probe = probes.probeOf(ex);
    // 10. Log: one access-log line once the response is done, whatever happened.
    res.once('close', () => {
      metrics.record(ex, (performance.now() - started) / 1000);
      if (!probe || config.logProbes) logs.access(accessEntryOf(ex));
    });
    (probe ? probes.answer(ex, probe) : dispatch(ex)).catch((err: unknown) => {
      try {
        answerError(ex, err);
      } catch (fatal) {
        logFailure(ex, fatal);
        res.destroy();
      }
    });
  }

  return {
    config,
    db,
    handle,
    complete,
    logError,
    logAccess: (entry) => logs.access(entry),
    reopenLogs: () => logs.reopen(),
    close: async () => {
      await runner.close();
      auth.close();
      await replicas?.close();
      if (!options.db) await db.close();
      await logs.close();
    },
  };
}

/** The scripts, the rewrite table and the database, migrated; a database opened here is closed again when this fails. */
async function prepare(config: Config, parts: { db: Db | undefined; logError: App['logError'] }) {
  const scripts = new ScriptLoader(config.scriptsDir, { reload: !config.production });
  const rules = await loadRules(config.rulesFile, { scriptExists: (name) => scripts.exists(name) });
  const events = {
    onError: (err: Error) => parts.logError(`database connection error: ${err.message}`),
    onWarning: (message: string) => parts.logError(message, 'warn'),
  };
  const db = parts.db ?? (await openDatabase(config, events));
  await prepareDatabase(db, config, events).catch(async (err: unknown) => {
    if (!parts.db) await db.close();
    throw err;
  });
  return { scripts, rules, db };
}

function notAllowed(method: string, allow: string[]): HttpError {
  return new HttpError(405, `${method} is not supported here; use ${allow.join(', ')}.`, { allow });
}

/** GET, HEAD and OPTIONS wherever there is a GET, and the change methods the script exports. */
function allowedMethods(script: { GET?: unknown; POST?: unknown; PUT?: unknown; DELETE?: unknown }): string[] {
  const changes = (['POST', 'PUT', 'DELETE'] as const).filter((m) => typeof script[m] === 'function');
  return script.GET ? ['GET', 'HEAD', 'OPTIONS', ...changes] : ['OPTIONS', ...changes];
}

/** `npm start`: one serving process, or with WEB_CONCURRENCY a primary that migrates once and forks workers. */
export async function start(config: Config = readConfig()): Promise<void> {
  if (config.webConcurrency > 1 && !config.databaseUrl) {
    throw new Error(
      'WEB_CONCURRENCY > 1 needs PostgreSQL: the embedded database (PGlite) serves one process only. Set DATABASE_URL or WEB_CONCURRENCY=1.',
    );
  }
  if (config.searchProcess?.serves) {
    // The search process the primary starts beside the workers (lib/search/service.ts).
    const logs = new Logs({ error: config.errorLog });
    const onError = (message: string) => logs.error(message, { level: 'warn' });
    const db = await openDatabase(config, {
      onError: (err) => onError(`database connection error: ${err.message}`),
      onWarning: onError,
    });
    const onComplete = () => process.send?.({ portfolio: 'complete' });
    return runSearchService(db, {
      socket: config.searchProcess.socket,
      limits: limitsOf(config),
      snapshot: config.searchSnapshot,
      onError,
      onComplete,
      reopenLogs: () => logs.reopen(),
    });
  }
  if (runsWorkers(config)) {
    return runPrimary(
      config,
      async () => {
        const say = (message: string) => console.error(`portfolio: ${message}`);
        const events = { onError: (err: Error) => say(`database connection error: ${err.message}`), onWarning: say };
        const db = await openDatabase(config, events);
        await prepareDatabase(db, config, events).finally(() => db.close());
      },
      { answers: { metrics: clusterMetrics }, fold: foldMetrics },
    );
  }
  const app = await createApp(config);
  await listen(app, config, config.databaseUrl ? 'PostgreSQL' : `PGlite in ${config.dataDir}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  start().catch((err: unknown) => {
    console.error(`portfolio could not start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
