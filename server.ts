// The HTTP front: maps each request through rewrite-rules.json to a handler script in
// scripts/, renders the script's document as HTML, XML or JSON, and logs the exchange
// the way Apache does. It listens only when run as the program (`npm start`).
import cluster from 'node:cluster';
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import createDebug from 'debug';
import type { AccessEntry } from './lib/access-log.ts';
import { formatAccessLine } from './lib/access-log.ts';
import { handleSignals, runPrimary, runsWorkers } from './lib/cluster.ts';
import { deferredSession, RequestAuth } from './lib/auth.ts';
import { createBodyReader, maxBodyBytes } from './lib/body.ts';
import type { Config } from './lib/config.ts';
import { projectRoot, readConfig } from './lib/config.ts';
import type { Db } from './lib/db.ts';
import { DbUnavailableError, openPglite, openPostgres } from './lib/db.ts';
import { renderErrorPage } from './lib/display-errors.ts';
import { formatAuthFailure, formatErrorLine } from './lib/error-log.ts';
import { HttpError, NoContent, Redirect } from './lib/http-error.ts';
import { createHttpServer, lingerAfterAnswer } from './lib/http-server.ts';
import { LogFile } from './lib/log-file.ts';
import { LoginThrottle } from './lib/login-throttle.ts';
import { effectiveMethod } from './lib/method-override.ts';
import { loadDemoData, migrate } from './lib/migrate.ts';
import type { Format } from './lib/negotiate.ts';
import { mediaTypes, negotiateErrorFormat, negotiateFormat, takeSuffix } from './lib/negotiate.ts';
import { createProxy, UpstreamError } from './lib/proxy.ts';
import type { Alternate } from './lib/render.ts';
import { alternatesOf, buildJson, buildXml, formatsOf, renderDocument } from './lib/render.ts';
import type { Exchange } from './lib/respond.ts';
import { clientAddress, etagOf, matchesEtag, sendBody, sendEmpty } from './lib/respond.ts';
import { loadRules, rewriteUrl } from './lib/rewrite.ts';
import { rewriteRequestOf } from './lib/rewrite-request.ts';
import { DataVersion, ResultCache } from './lib/result-cache.ts';
import type { Document, Outcome, ScriptModule, ScriptRequest } from './lib/script.ts';
import { ScriptLoader } from './lib/scripts.ts';
import { SessionStore } from './lib/session.ts';
import { describeError, parseStack } from './lib/stack.ts';
import { StaticFiles } from './lib/static-files.ts';
import { Templates } from './lib/templates.ts';

const traceRequest = createDebug('portfolio:request');

export interface App {
  config: Config;
  db: Db;
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  /** Access-log line for a request the HTTP parser refused before it reached handle. */
  logAccess: (entry: AccessEntry) => void;
  /** Error-log line for a problem outside any request (start-up, database pool). */
  logError: (message: string, level?: 'error' | 'warn' | 'notice') => void;
  reopenLogs: () => void;
  close: () => Promise<void>;
}

const scriptPath = /^\/([a-z][a-z0-9_-]*)\.php$/;
const methodsOfDocuments = ['GET', 'HEAD', 'OPTIONS'];
// Revalidated on every use (a 304 by ETag), so an edit shows at once, also to its author.
const publicCacheControl = 'public, no-cache';
// Pages that read the session differ per requester: never stored, never revalidated by ETag.
const privateCacheControl = 'private, no-store';
const sessionSweepMs = 10 * 60 * 1000;
const maxTargetLength = 8192;

export async function createApp(config: Config, options: { db?: Db } = {}): Promise<App> {
  const accessLog = new LogFile(config.accessLog, process.stdout);
  const errorLog = new LogFile(config.errorLog, process.stderr);
  const logError: App['logError'] = (message, level = 'error') =>
    errorLog.write(formatErrorLine({ time: new Date(), level, pid: process.pid, message }));

  const ownsDb = options.db === undefined;
  // A start-up problem goes to the error log too, where an operator looks first.
  const { scripts, rules, templates, files, db } = await prepare(config, options.db, logError).catch(async (err: unknown) => {
    logError(`portfolio could not start: ${err instanceof Error ? err.message : String(err)}`);
    await Promise.all([accessLog.close(), errorLog.close()]);
    throw err;
  });
  const site = { publicDir: config.publicDir, scriptExists: (name: string) => scripts.exists(name) };
  const proxy = createProxy({ timeoutMs: config.proxyTimeoutMs });
  const dataVersion = new DataVersion(db);
  const results = new ResultCache();
  // Rendered documents of scripts that declare `cacheable`: their GET depends on the URL and
  // the data alone. Search pages run 3 to 10 KB, so 500 of them stay within a few MB.
  const documents = new ResultCache({ limit: 500 });
  const basePath = config.baseUrl ? new URL(config.baseUrl).pathname.replace(/\/$/, '') : '';
  const sessions = new SessionStore(db, { idleMinutes: config.sessionIdleMinutes, maxHours: config.sessionMaxHours });
  const throttle = new LoginThrottle({ db });
  const sweep = setInterval(() => {
    sessions.deleteExpired().catch((err: unknown) => logError(`deleting expired sessions failed: ${(err as Error).message}`));
    throttle.deleteExpired().catch((err: unknown) => logError(`deleting old login counts failed: ${(err as Error).message}`));
  }, sessionSweepMs).unref();

  // Steps 1–8 of every request; one catch turns any failure into its response.
  async function dispatch(ex: Exchange): Promise<void> {
    const { req } = ex;
    // 1. Parse the request target.
    const target = parseTarget(req.url ?? '/');
    const origin = originOf(req, config);
    const link = (p: string) => origin + basePath + p;
    traceRequest('%s %s', req.method, req.url);

    // 2. Take the representation suffix off: one rule serves /personen and /personen.xml.
    //    An imported .htaccess table turns this off, so it sees paths as Apache does.
    const [bare, suffix]: [string, Format | null] = rules.representationSuffixes ? takeSuffix(target.path) : [target.path, null];

    // 3. Rewrite. Headers that conditions read go into Vary, as Apache does.
    const rewritten = rewriteUrl(rules, rewriteRequestOf(req, { path: bare, query: target.query }, site));
    if (rewritten.vary.length > 0) ex.res.setHeader('vary', [...new Set(rewritten.vary)].join(', '));
    switch (rewritten.kind) {
      case 'forbidden':
        throw new HttpError(403, 'Access to this address is forbidden.');
      case 'gone':
        throw new HttpError(410, 'This address is gone for good.');
      case 'redirect':
        return sendEmpty(ex, rewritten.status, { location: absoluteLocation(rewritten.location, suffix, link) });
      case 'proxy': {
        // The old site gets the path as requested: /about.html stays /about.html when a P rule takes it.
        const whole = suffix === null ? rewritten : rewriteUrl(rules, rewriteRequestOf(req, { path: target.path, query: target.query }, site));
        return proxy.forward(ex, whole.kind === 'proxy' ? whole.url : rewritten.url);
      }
      case 'loop':
        throw new Error(`The rewrite rules redirected ${target.path} internally more than 10 times (rule ${rewritten.rule + 1} last); end the loop with a condition or the END flag.`);
    }

    // 4. Pick the script, or a file from public/. A proxied upload may be larger; these never are.
    refuseLargeBody(req);
    const name = scriptPath.exec(rewritten.path)?.[1];
    if (name === undefined || !scripts.exists(name)) {
      const file = files.find(rewritten.rule === null ? target.path : rewritten.path);
      if (file && (req.method === 'GET' || req.method === 'HEAD')) {
        const headers = { 'content-type': file.type, etag: file.etag, 'cache-control': 'public, max-age=3600', 'last-modified': file.mtime.toUTCString() };
        if (matchesEtag(req.headers['if-none-match'], file.etag)) return sendEmpty(ex, 304, headers);
        return sendBody(ex, 200, headers, file.body);
      }
      throw new HttpError(404, `There is no document at ${target.path}.`);
    }
    const script = await scripts.load(name);

    // 5. Check the method. A change requested from another site is refused before anything
    //    is read (CONTRACT 5: Origin must match); a POST may run as PUT or DELETE (_method).
    if (req.method === 'OPTIONS') return sendEmpty(ex, 204, { allow: allowedMethods(script).join(', ') });
    if (req.method !== 'GET' && req.method !== 'HEAD' && req.headers.origin !== undefined && req.headers.origin !== origin) {
      throw new HttpError(403, `A ${req.method} from ${req.headers.origin.slice(0, 100)} is not accepted here; send it from ${origin}.`);
    }
    const readRequestBody = createBodyReader(req);
    const method = await effectiveMethod(req, readRequestBody);
    const handler = handlerOf(script, method);
    if (!handler) {
      const allow = allowedMethods(script);
      throw new HttpError(405, `${method} is not supported here; use ${allow.join(', ')}.`, { allow });
    }

    // 6. Choose the representation.
    const available = formatsOf(script);
    const format = suffix ?? negotiateFormat(req.headers.accept);
    if (format === null || !available.includes(format)) {
      throw new HttpError(406, 'None of the representations of this document is acceptable.', {
        alternates: alternatesOf(bare === '/' ? '/' : canonicalGuess(bare, rewritten.path), available, link),
      });
    }

    // 7. Run the script, or take its document as rendered at this data version.
    const warnings: string[] = [];
    // Made when a script first asks about the requester: most documents never do.
    let auth = null as RequestAuth | null;
    const authOf = () => (auth ??= createRequestAuth(req, target.path));
    let version: Promise<bigint> | null = null;
    // Only in production: in development an edited script or template shows on the next request.
    const cacheable = script.cacheable === true && (method === 'GET' || method === 'HEAD') && config.production;
    const refuseAuth = (): never => {
      throw new Error(`scripts/${name}.ts is cacheable, so its document cannot depend on who asks; drop its cacheable export or the call.`);
    };
    const request: ScriptRequest = {
      method: method === 'HEAD' ? 'GET' : method,
      format,
      query: new URLSearchParams(rewritten.query),
      headers: req.headers,
      db,
      link,
      warn: (message) => {
        // The line that called warn(): the first frame inside the scripts folder.
        const frame = parseStack(new Error(message), projectRoot).find((f) => f.file.startsWith(config.scriptsDir + path.sep));
        warnings.push(message);
        errorLog.write(formatErrorLine({
          time: new Date(), level: 'warn', pid: process.pid, client: clientPort(req),
          message: `Warning: ${message}${frame ? ` in ${path.relative(projectRoot, frame.file)} on line ${frame.line}` : ''}`,
        }));
      },
      remember: async (key, compute) => results.get(await (version ??= dataVersion.current()), key, compute),
      identify: () => (cacheable ? refuseAuth() : authOf().identify()),
      authenticate: (username, password) => (cacheable ? refuseAuth() : authOf().authenticate(username, password)),
      session: deferredSession(() => (cacheable ? refuseAuth() : authOf().session)),
      body: readRequestBody,
    };
    const produce = async (): Promise<Produced> => {
      let outcome;
      try {
        outcome = await handler(request);
      } catch (err) {
        if (!(err instanceof Redirect)) throw err;
        outcome = err;
      } finally {
        // Session changes travel with whatever answer follows, an error included.
        if (auth) await noteRequester(ex, auth);
      }
      if (outcome instanceof Redirect || outcome instanceof NoContent) return outcome;
      // 8a. Render.
      const alternates = alternatesOf(outcome.path, available, link);
      const text = renderDocument({
        format, scriptName: name, script, doc: outcome, link, templates,
        page: {
          title: outcome.title, base: basePath + '/', canonical: link(outcome.path), alternates,
          stylesheet: outcome.stylesheet ?? 'css/site.css', warnings: config.displayErrors ? warnings : [],
          user: ex.account ?? null,
        },
      });
      // Encoded once: the ETag, Content-Length and the socket then share the bytes. Given the
      // string, the hash and the socket each encode it and Content-Length counts it: 17 µs
      // against 10 µs for a person with 50 works.
      const body = Buffer.from(text);
      return { doc: outcome, alternates, body, etag: etagOf(body) };
    };
    const produced = cacheable
      ? await documents.get(await (version ??= dataVersion.current()), `${name}\u0000${format}\u0000${link('')}\u0000${rewritten.query}`, produce, (p) => 'body' in p && warnings.length === 0)
      : await produce();
    if (produced instanceof Redirect) {
      // A permanent move (an old slug) keeps the suffix: /person/old.json leads to /person/new.json.
      const kept = produced.status === 301 || produced.status === 308 ? suffix : null;
      return sendEmpty(ex, produced.status, { location: absoluteLocation(produced.location, kept, link), 'cache-control': 'no-store' });
    }
    if (produced instanceof NoContent) return sendEmpty(ex, 204, { 'cache-control': 'no-store' });

    // 8b. Send.
    const { doc, alternates, body, etag } = produced;
    const headers: Record<string, string> = {
      'content-type': mediaTypes[format],
      etag,
      'cache-control': doc.cacheControl ?? publicCacheControl,
      link: [`<${link(doc.path)}>; rel="canonical"`, ...alternates.map((a) => `<${a.href}>; rel="alternate"; type="${a.type}"`)].join(', '),
      'x-content-type-options': 'nosniff',
    };
    if (suffix === null) headers.vary = [...new Set(['Accept', ...rewritten.vary])].join(', ');
    if (doc.location) headers.location = link(doc.location);
    if (format === 'html') {
      headers['content-security-policy'] = "default-src 'self'; img-src 'self' https: http: data:; style-src 'self'; frame-ancestors 'none'; form-action 'self'";
      headers['referrer-policy'] = 'same-origin';
    }
    if (auth?.used) {
      headers['cache-control'] = privateCacheControl;
      delete headers.etag;
    } else if ((method === 'GET' || method === 'HEAD') && matchesEtag(req.headers['if-none-match'], etag)) {
      return sendEmpty(ex, 304, notModifiedHeaders(headers));
    }
    sendBody(ex, doc.status ?? 200, headers, body);
  }

  /** Who is asking, read only if the script asks; failed logins go to the error log for fail2ban. */
  function createRequestAuth(req: IncomingMessage, uri: string): RequestAuth {
    return new RequestAuth({
      req, db, sessions,
      cookie: { path: basePath + '/', secure: isSecure(req, config) },
      gate: throttle.gate(clientAddress(req), (message) => errorLog.write(formatErrorLine({
        time: new Date(), level: 'error', pid: process.pid, client: clientPort(req), message,
      }))),
      onFailure: (user, reason) => errorLog.write(formatAuthFailure({
        time: new Date(), pid: process.pid, client: clientPort(req), user, uri, reason,
        ...(req.headers.referer ? { referer: req.headers.referer } : {}),
      })),
    });
  }

  /** Cookies the script's session changes need, %u for the access log, the header's user. */
  async function noteRequester(ex: Exchange, auth: RequestAuth): Promise<void> {
    if (auth.cookies.length > 0) ex.res.setHeader('set-cookie', auth.cookies);
    ex.user = await auth.username();
    if (auth.used) ex.account = await auth.pageUser().catch(() => null);
  }

  function sendError(ex: Exchange, err: unknown, suffix: Format | null): void {
    const { req, res } = ex;
    if (res.headersSent) {
      logRequestError(ex, err);
      res.destroy();
      return;
    }
    if (err instanceof HttpError) {
      if (err.status >= 500) logRequestError(ex, err);
      return sendProblem(ex, err, suffix);
    }
    if (err instanceof DbUnavailableError) {
      logRequestError(ex, err);
      return sendProblem(ex, new HttpError(503, 'The database is not available at the moment; please try again shortly.', { headers: { 'retry-after': '5' } }), suffix);
    }
    logRequestError(ex, err);
    if (config.displayErrors) {
      return sendBody(ex, 500, { 'content-type': mediaTypes.html, 'cache-control': 'no-store' }, renderErrorPage(err, req, projectRoot));
    }
    // CONTRACT 6: in production a 500 delivers no content.
    sendEmpty(ex, 500, { 'cache-control': 'no-store' });
  }

  function sendProblem(ex: Exchange, err: HttpError, suffix: Format | null): void {
    const format = suffix ?? negotiateErrorFormat(ex.req.headers.accept);
    const headers: Record<string, string> = { 'cache-control': 'no-store', ...err.options.headers };
    if (err.options.allow) headers.allow = err.options.allow.join(', ');
    if (headers.connection === 'close') lingerAfterAnswer(ex.req);
    const title = http.STATUS_CODES[err.status] ?? 'Error';
    const problem = { type: err.options.type ?? 'about:blank', title, status: err.status, detail: err.message };
    const errors = err.options.errors ?? [];
    let body: string;
    if (format === 'json') {
      headers['content-type'] = 'application/problem+json; charset=utf-8';
      body = buildJson({ ...problem, ...(err.options.alternates ? { alternates: err.options.alternates } : {}), ...(errors.length > 0 ? { errors } : {}) });
    } else if (format === 'xml') {
      headers['content-type'] = 'application/problem+xml; charset=utf-8';
      const alternates = err.options.alternates?.map((a) => ({ '@_ref': a.href, '@_type': a.type }));
      const fields = errors.map((e) => ({ '@_field': e.field, '#text': e.message }));
      body = buildXml({ problem: {
        '@_xmlns': 'urn:ietf:rfc:7807', ...problem,
        ...(alternates ? { alternates: { alternate: alternates } } : {}), ...(fields.length > 0 ? { errors: { error: fields } } : {}),
      } });
    } else {
      headers['content-type'] = mediaTypes.html;
      body = templates.render('error', {
        page: { title: `${err.status} ${title}`, base: basePath + '/', canonical: null, alternates: [], stylesheet: 'css/site.css', warnings: [], user: ex.account ?? null },
        data: { ...problem, alternates: err.options.alternates ?? [], errors, login: err.options.login ? loginHref(err.options.login) : null },
      });
    }
    sendBody(ex, err.status, headers, body);
  }

  function logRequestError(ex: Exchange, err: unknown): void {
    const referer = ex.req.headers.referer;
    errorLog.write(formatErrorLine({
      time: new Date(), level: 'error', pid: process.pid, client: clientPort(ex.req),
      message: err instanceof UpstreamError ? err.logMessage : describeError(err, projectRoot), ...(referer ? { referer } : {}),
    }));
  }

  function logAccess(ex: Exchange): void {
    const { req, res } = ex;
    accessLog.write(formatAccessLine({
      remoteAddr: clientAddress(req), user: ex.user, time: new Date(),
      method: req.method ?? '-', target: req.url ?? '-', httpVersion: req.httpVersion,
      status: res.statusCode, bytes: ex.bytes,
      referer: req.headers.referer, userAgent: req.headers['user-agent'],
    }));
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const ex: Exchange = { req, res, bytes: 0, user: null };
    res.once('close', () => logAccess(ex));
    let suffix: Format | null = null;
    try {
      if (rules.representationSuffixes) suffix = takeSuffix((req.url ?? '').split('?')[0] ?? '')[1];
    } catch {
      // the suffix only chooses the error format
    }
    dispatch(ex).catch((err: unknown) => {
      try {
        sendError(ex, err, suffix);
      } catch (fatal) {
        logRequestError(ex, fatal);
        res.destroy();
      }
    });
  }

  return {
    config, db, handle, logError,
    logAccess: (entry) => accessLog.write(formatAccessLine(entry)),
    reopenLogs: () => { accessLog.reopen(); errorLog.reopen(); },
    close: async () => {
      clearInterval(sweep);
      if (ownsDb) await db.close();
      await Promise.all([accessLog.close(), errorLog.close()]);
    },
  };
}

/** Everything a request needs, checked before the first request: a bad table stops the start. */
async function prepare(config: Config, givenDb: Db | undefined, logError: App['logError']) {
  const reload = !config.production;
  const scripts = new ScriptLoader(config.scriptsDir, { reload });
  const rules = await loadRules(config.rulesFile, { scriptExists: (name) => scripts.exists(name) });
  const templates = new Templates(config.templatesDir, { reload });
  const files = new StaticFiles(config.publicDir, { reload });
  const db = givenDb ?? (await openDatabase(config, logError));
  try {
    await migrate(db, config.sqlDir);
    if (config.demoData && (await loadDemoData(db, config.sqlDir))) console.log('portfolio: loaded the demo data into the empty database');
  } catch (err) {
    if (!givenDb) await db.close();
    throw err;
  }
  return { scripts, rules, templates, files, db };
}

/** A script's answer: a redirect, 204, or its document rendered in the chosen representation. */
type Produced = Redirect | NoContent | { doc: Document; alternates: Alternate[]; body: Buffer; etag: string };

interface Target {
  /** Percent-decoded path. */
  path: string;
  /** Raw query string without '?'. */
  query: string;
}

function parseTarget(url: string): Target {
  if (url.length > maxTargetLength) throw new HttpError(414, `The address is longer than ${maxTargetLength} characters.`);
  if (!url.startsWith('/')) throw new HttpError(400, 'The request target must be a path beginning with /.');
  const mark = url.indexOf('?');
  const rawPath = mark === -1 ? url : url.slice(0, mark);
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    throw new HttpError(400, 'The address contains an invalid percent-encoding.');
  }
  // A NUL or a climb out of the root never names a document (CONTRACT 1: 404, never a file read).
  if (path.includes('\0') || path.split('/').includes('..')) throw new HttpError(404, 'There is no document at this address.');
  return { path, query: mark === -1 ? '' : url.slice(mark + 1) };
}

/** A body declared larger than any script reads is refused before a byte of it is read. */
function refuseLargeBody(req: IncomingMessage): void {
  if (Number(req.headers['content-length'] ?? 0) > maxBodyBytes) {
    throw new HttpError(413, `The request body is larger than ${maxBodyBytes / 1024 / 1024} MiB.`, { headers: { connection: 'close' } });
  }
}

/** Origin for absolute links: BASE_URL, or the Host header when it is allowed (CONTRACT 2). */
function originOf(req: IncomingMessage, config: Config): string {
  if (config.baseUrl) return new URL(config.baseUrl).origin;
  const host = (req.headers.host ?? 'localhost').toLowerCase();
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0] ?? '';
  if (!config.allowedHosts.includes(host) && !config.allowedHosts.includes(name)) {
    throw new HttpError(400, `The host ${host.slice(0, 100)} is not served here; add it to ALLOWED_HOSTS or set BASE_URL.`);
  }
  if (!/^[a-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9a-f:.]+\](:[0-9]{1,5})?$/.test(host)) {
    throw new HttpError(400, 'The Host header is malformed.');
  }
  return `${(req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'}://${host}`;
}

/** A 304 carries the validators and caching headers only (RFC 9110 section 15.4.5). */
function notModifiedHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of ['etag', 'cache-control', 'vary']) if (headers[name] !== undefined) kept[name] = headers[name];
  return kept;
}

/** Whether the session cookie must be Secure: served over TLS here, or behind a proxy at an https BASE_URL. */
function isSecure(req: IncomingMessage, config: Config): boolean {
  return Boolean((req.socket as { encrypted?: boolean }).encrypted) || config.baseUrl?.startsWith('https:') === true;
}

/** The login link of a 403 page, relative to <base href>: login?back=/entlehnte/3 */
function loginHref(back: string): string {
  return `login?back=${encodeURIComponent(back).replace(/%2F/g, '/')}`;
}

/** The handler a method runs: HEAD runs GET (the front drops the body). */
function handlerOf(script: ScriptModule, method: string): ((req: ScriptRequest) => Promise<Outcome>) | undefined {
  if (method === 'GET' || method === 'HEAD') return script.GET;
  return method === 'POST' || method === 'PUT' || method === 'DELETE' ? script[method] : undefined;
}

function allowedMethods(script: ScriptModule): string[] {
  const extra = (['POST', 'PUT', 'PATCH', 'DELETE'] as const).filter((m) => typeof (script as Record<string, unknown>)[m] === 'function');
  return script.GET ? [...methodsOfDocuments, ...extra] : ['OPTIONS', ...extra];
}

/** Before the script has run, the rewritten request is the best name for the document. */
function canonicalGuess(bare: string, scriptPathname: string): string {
  return bare.endsWith('.php') ? scriptPathname.replace(/\.php$/, '') : bare;
}

/** The rewrite engine has already percent-encoded the location; only make it absolute. */
function absoluteLocation(location: string, suffix: Format | null, link: (p: string) => string): string {
  if (/^https?:\/\//i.test(location)) return location;
  const mark = location.indexOf('?');
  const pathPart = mark === -1 ? location : location.slice(0, mark);
  const query = mark === -1 ? '' : location.slice(mark);
  return link(pathPart + (suffix ? `.${suffix}` : '')) + query;
}

function clientPort(req: IncomingMessage): string {
  return `${clientAddress(req)}:${req.socket.remotePort ?? 0}`;
}

async function openDatabase(config: Config, logError: App['logError']): Promise<Db> {
  if (config.databaseUrl) {
    return openPostgres({
      connectionString: config.databaseUrl,
      statementTimeoutMs: config.statementTimeoutMs,
      connectTimeoutMs: config.dbConnectTimeoutMs,
      outcomeTimeoutMs: config.dbOutcomeTimeoutMs,
      onError: (err) => logError(`database connection error: ${err.message}`),
      onWarning: (message) => logError(message, 'warn'),
    });
  }
  return openPglite({ dataDir: config.dataDir });
}

/** Starts the server: configuration, database, listen; logs rotate on SIGHUP, SIGTERM stops gracefully. */
export async function startServer(config: Config): Promise<http.Server> {
  checkConcurrency(config);
  const app = await createApp(config);
  const server = createHttpServer(app);
  handleSignals(server, app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const address = server.address();
  const where = typeof address === 'object' && address ? `http://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}` : String(address);
  const who = cluster.isWorker ? `worker ${process.pid} ` : '';
  console.log(`portfolio: ${who}listening on ${where}/ (${config.databaseUrl ? 'PostgreSQL' : `PGlite in ${config.dataDir}`}, display_errors ${config.displayErrors ? 'on' : 'off'})`);
  return server;
}

/** With WEB_CONCURRENCY > 1: the primary migrates once, then forks the workers (lib/cluster.ts). */
export async function startWorkers(config: Config): Promise<void> {
  checkConcurrency(config);
  await runPrimary(config, async () => {
    const db = await openDatabase(config, (message) => console.error(`portfolio: ${message}`));
    try {
      await migrate(db, config.sqlDir);
      if (config.demoData && (await loadDemoData(db, config.sqlDir))) console.log('portfolio: loaded the demo data into the empty database');
    } finally {
      await db.close();
    }
  });
}

function checkConcurrency(config: Config): void {
  if (config.webConcurrency > 1 && !config.databaseUrl) {
    throw new Error('WEB_CONCURRENCY > 1 needs PostgreSQL: the embedded database (PGlite) serves one process only. Set DATABASE_URL or WEB_CONCURRENCY=1.');
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const start = async () => {
    const config = readConfig();
    return runsWorkers(config) ? startWorkers(config) : startServer(config);
  };
  start().catch((err: unknown) => {
    console.error(`portfolio could not start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
