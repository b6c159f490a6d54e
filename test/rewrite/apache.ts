// Test support: a real Apache httpd with mod_rewrite and mod_php on 127.0.0.1, with its own
// config, document root and logs in a temporary folder, started and stopped by the test.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const modules = '/usr/lib/apache2/modules';

export interface Apache {
  origin: string;
  port: number;
  docRoot: string;
  /** Replaces the document root's .htaccess; Apache reads it again on the next request. */
  useHtaccess: (text: string) => void;
  errorLog: () => string;
  stop: () => Promise<void>;
}

export interface ApacheSite {
  /** Files copied into the document root. */
  publicDir: string;
  /** Written as <name>.php for each name. */
  phpScript: string;
  scriptNames: string[];
}

export async function startApache(site: ApacheSite): Promise<Apache> {
  const php = existsSync(modules) ? readdirSync(modules).find((f) => /^libphp[0-9.]*\.so$/.test(f)) : undefined;
  if (!existsSync('/usr/sbin/apache2') || php === undefined) {
    throw new Error(
      'Apache httpd with mod_php is needed: apt-get install -y apache2 libapache2-mod-php (.ci/run does this).',
    );
  }
  const root = mkdtempSync(path.join(os.tmpdir(), 'portfolio-apache-'));
  const docRoot = path.join(root, 'htdocs');
  cpSync(site.publicDir, docRoot, { recursive: true });
  for (const name of site.scriptNames) cpSync(site.phpScript, path.join(docRoot, `${name}.php`));
  // As root, Apache serves as "nobody", who must be able to read the folder.
  chmodSync(root, 0o755);
  const port = await freePort();
  writeFileSync(path.join(root, 'httpd.conf'), configOf({ root, docRoot, port, php }));
  // Its own process group: on stop, Apache signals its whole group, which must not include us.
  const child = spawn('/usr/sbin/apache2', ['-f', path.join(root, 'httpd.conf'), '-DFOREGROUND'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  await waitForPort(port, child, () => stderr);
  const readLog = () => {
    try {
      return readFileSync(path.join(root, 'error.log'), 'utf8');
    } catch {
      return '';
    }
  };
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    docRoot,
    useHtaccess: (text) => writeFileSync(path.join(docRoot, '.htaccess'), text),
    errorLog: readLog,
    stop: () => stopApache(child, root),
  };
}

function configOf(options: { root: string; docRoot: string; port: number; php: string }): string {
  const { root, docRoot, port, php } = options;
  const asRoot = process.getuid?.() === 0;
  return [
    `ServerRoot "${root}"`,
    `DefaultRuntimeDir "${root}"`,
    `PidFile "${root}/httpd.pid"`,
    `ErrorLog "${root}/error.log"`,
    'LogLevel warn',
    `Listen 127.0.0.1:${port}`,
    'ServerName 127.0.0.1',
    ...(asRoot ? ['User nobody', 'Group nogroup'] : []),
    `LoadModule mpm_prefork_module ${modules}/mod_mpm_prefork.so`,
    `LoadModule authz_core_module ${modules}/mod_authz_core.so`,
    `LoadModule rewrite_module ${modules}/mod_rewrite.so`,
    `LoadModule php_module ${modules}/${php}`,
    'StartServers 2',
    'MinSpareServers 1',
    'MaxSpareServers 2',
    'MaxRequestWorkers 4',
    `DocumentRoot "${docRoot}"`,
    `<Directory "${docRoot}">`,
    '  AllowOverride All',
    '  Options FollowSymLinks',
    '  Require all granted',
    '</Directory>',
    '<FilesMatch "\\.php$">',
    '  SetHandler application/x-httpd-php',
    '</FilesMatch>',
    '',
  ].join('\n');
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function waitForPort(port: number, child: ChildProcess, stderr: () => string): Promise<void> {
  const until = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Apache did not start (exit ${child.exitCode}): ${stderr()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`Apache did not listen on 127.0.0.1:${port} within 15 s: ${stderr()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stopApache(child: ChildProcess, root: string): Promise<void> {
  if (child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  rmSync(root, { recursive: true, force: true });
}
