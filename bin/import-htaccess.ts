// npm run import-htaccess -- path/to/.htaccess [--out rewrite-rules.json] [--upstream URL]
// [--directory /] [--scripts DIR]: an Apache .htaccess in, a rewrite table out. Every line
// that cannot be carried over goes to stderr with its line number and the reason.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { importHtaccess } from './lib/htaccess.ts';

const usage =
  'usage: npm run import-htaccess -- path/to/.htaccess [--out rewrite-rules.json] [--upstream http://127.0.0.1:8000] [--directory /] [--scripts scripts]';

function main(): number {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      upstream: { type: 'string' },
      directory: { type: 'string', default: '/' },
      scripts: { type: 'string' },
    },
  });
  const file = positionals[0];
  if (file === undefined || positionals.length > 1) return fail(usage);
  if (!/^\/(?:.*\/)?$/.test(values.directory))
    return fail(
      `--directory must be a site path that starts and ends with "/", such as /shop/; got ${values.directory}.`,
    );
  if (values.upstream !== undefined && !/^https?:\/\/[^/]+\/?$/i.test(values.upstream))
    return fail(`--upstream must be an origin such as http://127.0.0.1:8000; got ${values.upstream}.`);
  const scriptsDir = path.resolve(values.scripts ?? process.env.SCRIPTS_DIR ?? 'scripts');
  let text: string;
  let scripts: Set<string>;
  try {
    text = readFileSync(file, 'utf8');
    scripts = new Set(
      readdirSync(scriptsDir)
        .filter((f) => f.endsWith('.ts'))
        .map((f) => f.slice(0, -3)),
    );
  } catch (error) {
    return fail(
      `${(error as Error).message}; check the path of the .htaccess file and of the scripts folder (--scripts).`,
    );
  }
  const { table, findings } = importHtaccess(text, {
    directory: values.directory,
    upstream: values.upstream ?? null,
    source: path.basename(file),
    scriptExists: (name) => scripts.has(name),
  });
  for (const finding of findings) {
    process.stderr.write(
      `${file}:${finding.line}: not carried over: ${finding.reason}${finding.text ? `\n    ${finding.text}` : ''}\n`,
    );
  }
  const json = JSON.stringify(table, null, 2) + '\n';
  if (values.out === undefined) process.stdout.write(json);
  else writeFileSync(values.out, json);
  process.stderr.write(
    `${file}: ${table.rules.length} rule${table.rules.length === 1 ? '' : 's'} imported, ${findings.length} line${findings.length === 1 ? '' : 's'} not carried over.\n`,
  );
  return 0;
}

function fail(message: string): number {
  process.stderr.write(message + '\n');
  return 2;
}

process.exitCode = main();
