// docs/development.md, Add a resource: a copy of the site gets a new resource, the newest works at
// /werke, in exactly the files that section lists, and it answers as every resource does: in
// three representations at both addresses, valid against its own schemas, and described in
// /openapi.json. The list in the docs is read from the docs, so a step they leave out fails here.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { Json, TestServer } from './helpers.ts';
import { missingTool, readJson, root, startTestServer, xmllint } from './helpers.ts';

const rule = { pattern: '^/werke$', substitution: '/werke.php', flags: ['L', 'QSA'] };

/** The resource's files by their path in the site, as the docs' list names them. */
const resource: Record<string, string | ((site: string) => string)> = {
  'scripts/werke.ts': `// The five newest works: /werke and werke.php.
import type { ApiFragment, Document, LinkFn, ScriptRequest, View } from '../lib/page/index.ts';

interface Werke {
  werke: { id: number; titel: string }[];
}

export async function GET({ db }: ScriptRequest): Promise<Document<Werke>> {
  const werke = await db.query<{ id: number; titel: string }>('SELECT id, titel FROM werk ORDER BY id DESC LIMIT 5');
  return { path: '/werke', title: 'Newest works', data: { werke } };
}

function toJson({ werke }: Werke, link: LinkFn) {
  return { werke: werke.map((w) => ({ titel: w.titel, url: link(\`/werk/\${w.id}\`) })) };
}

function toXml({ werke }: Werke, link: LinkFn) {
  return { werke: { werk: werke.map((w) => ({ '@_ref': link(\`/werk/\${w.id}\`), '#text': w.titel })) } };
}

export const view: View = { template: 'werke', toJson, toXml };

export const api: ApiFragment = ({ ok, notModified }) => [
  {
    path: '/werke',
    operations: {
      get: { summary: 'The five newest works.', responses: { 200: ok('The newest works.', 'werke'), 304: notModified } },
    },
  },
];
`,
  'templates/werke.ejs': `<%- include('/partials/header', { page }) %>
<h1>Newest works</h1>
<ul>
<% for (const werk of data.werke) { %>  <li><a href="werk/<%= werk.id %>"><%= werk.titel %></a></li>
<% } %></ul>
<%- include('/partials/footer', { page }) %>
`,
  // The rule goes before the person list's, as the docs' example rule would.
  'rewrite-rules.json': (site) => {
    const table = JSON.parse(readFileSync(path.join(site, 'rewrite-rules.json'), 'utf8')) as {
      rules: { pattern: string }[];
    };
    table.rules.splice(
      table.rules.findIndex((r) => r.pattern === '^/personen$'),
      0,
      rule,
    );
    return `${JSON.stringify(table, null, 2)}\n`;
  },
  'public/schema/werke.json': `${JSON.stringify(
    {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: 'werke.json',
      title: 'Newest works',
      description: 'The five newest works, each with its title and address.',
      type: 'object',
      required: ['werke'],
      additionalProperties: false,
      properties: {
        werke: {
          type: 'array',
          maxItems: 5,
          items: {
            type: 'object',
            required: ['titel', 'url'],
            additionalProperties: false,
            properties: { titel: { type: 'string', minLength: 1 }, url: { type: 'string', format: 'uri' } },
          },
        },
      },
    },
    null,
    2,
  )}\n`,
  'public/schema/werke.xsd': `<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:element name="werke">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="werk" minOccurs="0" maxOccurs="5">
          <xs:complexType>
            <xs:simpleContent>
              <xs:extension base="xs:string">
                <xs:attribute name="ref" type="xs:anyURI" use="required"/>
              </xs:extension>
            </xs:simpleContent>
          </xs:complexType>
        </xs:element>
      </xs:sequence>
    </xs:complexType>
  </xs:element>
</xs:schema>
`,
};

/** The files docs/development.md's "Add a resource" lists, in its numbered steps. */
function listedFiles(): string[] {
  const docs = readFileSync(path.join(root, 'docs/development.md'), 'utf8');
  const section = /^## Add a resource\n([\s\S]*?)^## /m.exec(docs)?.[1] ?? '';
  return [...section.matchAll(/^\d+\. `([^`]+)`/gm)].map((m) => m[1] as string);
}

let site: string;
let scripts: string;
let server: TestServer;
/** Where a file of the list goes in the copy: the scripts beside lib/, as they import ../lib/page/index.ts. */
const copyOf = (file: string) =>
  file.startsWith('scripts/') ? path.join(scripts, file.slice('scripts/'.length)) : path.join(site, file);
before(async () => {
  site = mkdtempSync(path.join(os.tmpdir(), 'portfolio-site-'));
  scripts = mkdtempSync(path.join(root, '.scripts-'));
  cpSync(path.join(root, 'scripts'), scripts, { recursive: true });
  for (const part of ['templates', 'public', 'rewrite-rules.json']) {
    cpSync(path.join(root, part), path.join(site, part), { recursive: true });
  }
  for (const [file, content] of Object.entries(resource)) {
    writeFileSync(copyOf(file), typeof content === 'string' ? content : content(site));
  }
  server = await startTestServer({
    SCRIPTS_DIR: scripts,
    TEMPLATES_DIR: path.join(site, 'templates'),
    PUBLIC_DIR: path.join(site, 'public'),
    REWRITE_RULES: path.join(site, 'rewrite-rules.json'),
  });
});
after(async () => {
  await server?.close();
  if (site) rmSync(site, { recursive: true, force: true });
  if (scripts) rmSync(scripts, { recursive: true, force: true });
});

describe('a resource added by the list in docs/development.md', () => {
  test('the list names exactly the files the resource is made of', () => {
    assert.deepEqual(listedFiles().sort(), Object.keys(resource).sort());
  });

  test("answers in HTML, XML and JSON at its clean address and its script's", async () => {
    const newest = (await readJson(await fetch(`${server.origin}/werke.json`))) as Json;
    assert.equal(newest.werke.length, 5);
    for (const [target, type] of [
      ['/werke', 'text/html; charset=utf-8'],
      ['/werke.html', 'text/html; charset=utf-8'],
      ['/werke.xml', 'application/xml; charset=utf-8'],
      ['/werke.json', 'application/json; charset=utf-8'],
      ['/werke.php', 'text/html; charset=utf-8'],
    ] as const) {
      const res = await fetch(`${server.origin}${target}`);
      assert.equal(res.status, 200, target);
      assert.equal(res.headers.get('content-type'), type, target);
      assert.ok(res.headers.get('etag'), target);
      // The newest title, escaped in HTML and XML.
      const titel: string = newest.werke[0].titel;
      const shown = type.startsWith('application/json') ? titel : titel.replace(/&/g, '&amp;').replace(/</g, '&lt;');
      assert.ok((await res.text()).includes(shown), target);
    }
    const negotiated = await fetch(`${server.origin}/werke`, { headers: { accept: 'application/xml' } });
    assert.equal(negotiated.headers.get('content-type'), 'application/xml; charset=utf-8');
  });

  test('its JSON is valid against its JSON Schema, served under /schema/', async () => {
    const schema = await readJson(await fetch(`${server.origin}/schema/werke.json`));
    const ajv = new Ajv2020({ allErrors: true, strict: true });
    (ajvFormats as unknown as { default: (a: Ajv2020) => void }).default(ajv);
    const validate = ajv.compile(schema);
    assert.ok(validate(await readJson(await fetch(`${server.origin}/werke.json`))), ajv.errorsText(validate.errors));
  });

  test('its XML is valid against its XML Schema', {
    skip: missingTool('/usr/bin/xmllint', 'libxml2-utils'),
  }, async () => {
    const xml = await (await fetch(`${server.origin}/werke.xml`)).text();
    const result = await xmllint(path.join(site, 'public/schema/werke.xsd'), xml);
    assert.equal(result.code, 0, result.messages);
  });

  test('/openapi.json describes both addresses, with its schemas', async () => {
    const spec = (await readJson(await fetch(`${server.origin}/openapi.json`))) as Json;
    for (const address of ['/werke', '/werke.php']) {
      const content = spec.paths[address]?.get?.responses?.['200']?.content;
      assert.ok(content, `${address} is in /openapi.json`);
      assert.equal(content['application/json'].schema.$ref, `${server.origin}/schema/werke.json`);
      assert.equal(content['application/xml'].schema.externalDocs.url, `${server.origin}/schema/werke.xsd`);
    }
  });
});
