// The deployment kit in deploy/ as the tools read it: nginx -t, haproxy -c and systemd-analyze
// verify on the files as shipped (paths moved to a temporary folder, nothing else changed), and
// the Dockerfile and compose.yaml, which no Docker here can build, parsed and checked against
// the project: every file they copy or mount exists, every setting they give is one the server
// reads, the names nginx's sed replaces are in the site it ships.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { readConfig } from '../../lib/config.ts';
import { missingTool, root } from '../helpers.ts';

const deploy = path.join(root, 'deploy');
const read = (file: string) => readFileSync(path.join(deploy, file), 'utf8');
let dir: string;

before(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'portfolio-deploy-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-keyout',
      path.join(dir, 'site.key'),
      '-out',
      path.join(dir, 'site.crt'),
    ],
    { stdio: 'ignore' },
  );
  writeFileSync(
    path.join(dir, 'site.pem'),
    readFileSync(path.join(dir, 'site.crt'), 'utf8') + readFileSync(path.join(dir, 'site.key'), 'utf8'),
  );
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** The settings the server reads (lib/config.ts names each as env.NAME). */
function settingsRead(): Set<string> {
  const source = readFileSync(path.join(root, 'lib', 'config.ts'), 'utf8');
  return new Set(
    [...source.matchAll(/env\.([A-Z_]+)|readInteger\(env, '([A-Z_]+)'|readBoolean\(env, '([A-Z_]+)'/g)].map(
      (m) => m[1] ?? m[2] ?? m[3] ?? '',
    ),
  );
}

describe('the nginx site', () => {
  const skip = missingTool('/usr/sbin/nginx', 'nginx');
  test('passes nginx -t', { skip }, () => {
    const site = read('nginx/portfolio.conf')
      .replace('/etc/ssl/certs/example.org.pem', path.join(dir, 'site.crt'))
      .replace('/etc/ssl/private/example.org.key', path.join(dir, 'site.key'));
    writeFileSync(path.join(dir, 'site.conf'), site);
    writeFileSync(path.join(dir, 'nginx.conf'), nginxMain(dir, path.join(dir, 'site.conf')));
    const run = spawnSync('/usr/sbin/nginx', ['-t', '-q', '-p', dir, '-c', path.join(dir, 'nginx.conf')], {
      encoding: 'utf8',
    });
    // Ports 80 and 443 need root to bind, not to be checked.
    assert.equal(run.status, 0, run.stderr);
  });

  test('passes what the load balancer needs: forwarded headers, retries, no instance taken out for its answers, no /metrics', () => {
    const site = read('nginx/portfolio.conf');
    for (const line of [
      'proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
      'proxy_set_header X-Forwarded-Proto $scheme;',
      'proxy_set_header Host $http_host;',
      'proxy_set_header Forwarded "";',
      'proxy_set_header X-Forwarded-Host "";',
      'proxy_next_upstream error timeout;',
      'keepalive_timeout 4s;',
      'server 127.0.0.1:8081 max_fails=0;',
      'server 127.0.0.1:8082 max_fails=0;',
    ]) {
      assert.ok(site.includes(line), line);
    }
    assert.match(site, /location = \/metrics \{\s+return 404;/);
  });

  test('takes a picture of the default size limit, with the form around it, through to the instances', () => {
    const size = /client_max_body_size (\d+)m;/.exec(read('nginx/portfolio.conf'))?.[1];
    assert.ok(size, 'client_max_body_size is set in MiB');
    // The instances take an upload of PICTURE_MAX_BYTES and 64 KiB of form around it (lib/http/body.ts).
    assert.ok(
      Number(size) * 1024 * 1024 >= readConfig({}).pictureMaxBytes + 64 * 1024,
      `client_max_body_size ${size}m`,
    );
  });
});

describe('the HAProxy config', () => {
  const skip = missingTool('/usr/sbin/haproxy', 'haproxy');
  test('passes haproxy -c and checks /readyz', { skip }, () => {
    const config = read('haproxy/haproxy.cfg').replace(
      '/etc/haproxy/certs/example.org.pem',
      path.join(dir, 'site.pem'),
    );
    writeFileSync(path.join(dir, 'haproxy.cfg'), config);
    const run = spawnSync('/usr/sbin/haproxy', ['-c', '-f', path.join(dir, 'haproxy.cfg')], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(config, /option httpchk GET \/readyz/);
    assert.match(
      config,
      /option forwardfor\n\s+http-request del-header Forwarded\n\s+http-request del-header X-Forwarded-Host\n/,
    );
  });
});

describe('the systemd unit', () => {
  const skip = missingTool('/usr/bin/systemd-analyze', 'systemd');
  test('passes systemd-analyze verify, with the hardening and the signals the server knows', { skip }, () => {
    // An instance of the template, as `systemctl enable portfolio@8081` makes it.
    const unit = path.join(dir, 'portfolio@8081.service');
    writeFileSync(unit, read('systemd/portfolio@.service'));
    const run = spawnSync('/usr/bin/systemd-analyze', ['verify', unit], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stderr, '');
    const text = read('systemd/portfolio@.service');
    for (const line of [
      'KillMode=mixed',
      'ProtectSystem=strict',
      'NoNewPrivileges=yes',
      'LogsDirectory=portfolio/%i',
      'StateDirectory=portfolio',
      'RuntimeDirectory=portfolio-%i',
      'ExecReload=/bin/kill -USR2 $MAINPID',
    ]) {
      assert.ok(text.split('\n').includes(line), line);
    }
    const settings = settingsRead();
    for (const [, name] of text.matchAll(/(?:^Environment=|\s)([A-Z_]+)=/gm))
      assert.ok(settings.has(name as string), `${name} is no setting`);
    // The command is npm start's, without npm.
    const start = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start as string;
    assert.ok(text.includes(`ExecStart=/usr/bin/node ${start.replace('NODE_ENV=production node ', '')}`), start);
  });
});

describe('the Dockerfile', () => {
  const stages = dockerStages(read('Dockerfile'));
  const final = stages.at(-1) as Stage;

  test('builds in one stage and runs the production packages as a user that is not root', () => {
    assert.ok(stages.length >= 2);
    const run = (stage: Stage) =>
      stage.instructions
        .filter((i) => i.op === 'RUN')
        .map((i) => i.args)
        .join('\n');
    assert.match(run(stages[0] as Stage), /npm ci\b/);
    assert.match(run(stages[0] as Stage), /npm run build/);
    // The production packages only: installed in the last stage, or pruned in the first (which has
    // the compiler for native modules) and copied from it.
    const pruned =
      /npm prune --omit=dev/.test(run(stages[0] as Stage)) &&
      final.instructions.some((i) => i.op === 'COPY' && /^--from=build \/app\/node_modules\b/.test(i.args));
    assert.ok(/npm ci --omit=dev/.test(run(final)) || pruned, 'the production packages only');
    const ops = final.instructions.map((i) => i.op);
    const user = final.instructions.findLast((i) => i.op === 'USER');
    assert.ok(user && !['root', '0'].includes(user.args.trim()), 'a USER that is not root');
    assert.ok(ops.lastIndexOf('USER') < ops.indexOf('CMD'));
    const health = final.instructions.find((i) => i.op === 'HEALTHCHECK');
    assert.match(health?.args ?? '', /\/healthz/);
    // The command is npm start's, without npm.
    const start = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start as string;
    const command = start
      .replace('NODE_ENV=production ', '')
      .split(' ')
      .map((word) => JSON.stringify(word))
      .join(', ');
    assert.equal(final.instructions.findLast((i) => i.op === 'CMD')?.args, `[${command}]`);
  });

  test('copies only files that exist, are not left out of the context, and stages that are there', () => {
    const ignored = readFileSync(path.join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    const names = new Set(stages.map((s) => s.name));
    for (const stage of stages) {
      for (const copy of stage.instructions.filter((i) => i.op === 'COPY')) {
        const words = copy.args.split(/\s+/);
        const from = words.find((w) => w.startsWith('--from='));
        const sources = words.filter((w) => !w.startsWith('--')).slice(0, -1);
        if (from) {
          assert.ok(names.has(from.slice(7)), `${copy.args}: no stage ${from}`);
          continue;
        }
        for (const source of sources) {
          if (source === '.') continue;
          assert.ok(existsSync(path.join(root, source)), `${copy.args}: ${source} does not exist`);
          assert.ok(!ignored.includes(source), `${source} is in .dockerignore`);
        }
      }
      for (const env of stage.instructions.filter((i) => i.op === 'ENV')) {
        for (const [, name] of env.args.matchAll(/([A-Z_]+)=/g))
          assert.ok(name === 'NODE_ENV' || settingsRead().has(name as string), `${name} is no setting`);
      }
    }
  });
});

describe('compose.yaml', () => {
  const compose = parse(read('compose.yaml')) as Compose;

  test('runs PostgreSQL, two instances built from the Dockerfile and nginx with the shipped site', () => {
    assert.deepEqual(Object.keys(compose.services).sort(), ['app1', 'app2', 'nginx', 'postgres']);
    for (const name of ['app1', 'app2']) {
      const app = compose.services[name] as Service;
      assert.ok(existsSync(path.join(deploy, app.build?.context ?? '', app.build?.dockerfile ?? '')), 'the Dockerfile');
      assert.equal(app.environment?.WEB_CONCURRENCY, '2');
      assert.match(app.environment?.DATABASE_URL ?? '', /@postgres:5432\//);
      for (const setting of Object.keys(app.environment ?? {}))
        assert.ok(settingsRead().has(setting), `${setting} is no setting`);
      assert.equal(app.depends_on?.postgres?.condition, 'service_healthy');
    }
    const nginx = compose.services.nginx as Service;
    const mounts = (nginx.volumes ?? []).map((v) => v.split(':')[0] as string);
    assert.ok(mounts.includes('./nginx/portfolio.conf'));
    // The certificate is the operator's (docs/operations.md); everything else is shipped.
    for (const mount of mounts.filter((m) => !m.startsWith('./tls/')))
      assert.ok(existsSync(path.join(deploy, mount)), mount);
    // The addresses the sed in nginx's command replaces are the ones the site has.
    const site = read('nginx/portfolio.conf');
    const command = (nginx.command ?? []).join(' ');
    const replaced = [...command.matchAll(/s\/([^/]+)\/([^/]+)\//g)];
    assert.equal(replaced.length, 2);
    for (const [, from, to] of replaced) {
      assert.ok(site.includes(`server ${from} `), `the site has no server ${from}`);
      assert.match(to as string, /^app[12]:8080$/);
    }
  });
});

interface Service {
  build?: { context: string; dockerfile: string };
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  volumes?: string[];
  command?: string[];
}
interface Compose {
  services: Record<string, Service>;
}
interface Stage {
  name: string | null;
  instructions: { op: string; args: string }[];
}

/** The stages of a Dockerfile, each with its instructions (continued lines joined, comments left out). */
function dockerStages(text: string): Stage[] {
  const lines = text
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n');
  const stages: Stage[] = [];
  for (const line of lines.map((l) => l.trim()).filter(Boolean)) {
    const [op = '', ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (op.toUpperCase() === 'FROM') {
      stages.push({ name: /\sAS\s+(\S+)/i.exec(line)?.[1] ?? null, instructions: [] });
      continue;
    }
    assert.ok(stages.length > 0, `${op} before FROM`);
    assert.ok(
      ['RUN', 'COPY', 'ENV', 'WORKDIR', 'USER', 'EXPOSE', 'VOLUME', 'HEALTHCHECK', 'CMD', 'ARG', 'LABEL'].includes(
        op.toUpperCase(),
      ),
      `unknown instruction ${op}`,
    );
    stages.at(-1)?.instructions.push({ op: op.toUpperCase(), args });
  }
  return stages;
}

/** A main nginx.conf for a user without root: every path in dir, the site included. */
export function nginxMain(dir: string, site: string): string {
  return `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log ${dir}/nginx-access.log;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  include ${site};
}
`;
}
