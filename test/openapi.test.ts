// The OpenAPI document (scripts/openapi.ts): valid OpenAPI 3.1 by a validator that knows the
// specification's schemas, and exactly the addresses the site has: every route of the rewrite
// table and every script's own address is in it, and nothing else is.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { loadRules, rewriteUrl } from '../lib/rewrite/index.ts';
import type { TestServer } from './helpers.ts';
import { root, startTestServer } from './helpers.ts';

type Spec = { openapi: string; servers: { url: string }[]; paths: Record<string, Record<string, unknown>> };

let server: TestServer;
let spec: Spec;
before(async () => {
  server = await startTestServer();
  const res = await fetch(`${server.origin}/openapi.json`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/vnd.oai.openapi+json;version=3.1');
  spec = (await res.json()) as Spec;
});
after(async () => {
  await server?.close();
});

const scripts = readdirSync(path.join(root, 'scripts'))
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.replace(/\.ts$/, ''));
/** A template path with example values: /person/{person} → /person/max-muster and /person/1. */
const examples = (template: string) =>
  ['max-muster', '1']
    .filter((person, i) => i === 0 || template.includes('{person}'))
    .map((person) =>
      template.replace('{person}', person).replace('{id}', '7').replace('{uid}', '2').replace('{wid}', '14'),
    );

describe('OpenAPI', () => {
  test('is valid OpenAPI 3.1', async () => {
    const validator = new Validator();
    // The JSON Schemas of the representations, which the document refers to by their addresses.
    for (const ref of new Set([...JSON.stringify(spec).matchAll(/"\$ref":"([^"#]+)"/g)].map((m) => m[1] as string))) {
      await validator.addSpecRef((await (await fetch(ref)).json()) as Parameters<Validator['addSpecRef']>[0], ref);
    }
    const result = await validator.validate(spec as unknown as Parameters<Validator['validate']>[0]);
    assert.deepEqual(result.errors, undefined, JSON.stringify(result.errors, null, 2)?.slice(0, 3000));
    assert.equal(result.valid, true);
    assert.equal(validator.version, '3.1');
    assert.equal(spec.servers[0]?.url, server.origin);
  });

  test('has every route of the rewrite table and every script, and nothing else', async () => {
    const rules = await loadRules(path.join(root, 'rewrite-rules.json'), {
      scriptExists: (name) => scripts.includes(name),
    });
    const scriptRules = new Set(
      rules.rules.flatMap((rule) => (/\.php(\?|$)/.test(rule.source.substitution) ? [rule.index] : [])),
    );
    const reached = new Set<number>();
    for (const url of Object.keys(spec.paths).flatMap(examples)) {
      const template = url;
      if (url.endsWith('.php')) {
        assert.ok(scripts.includes(url.slice(1, -4)), `${template} names a script that exists`);
        continue;
      }
      const decision = rewriteUrl(rules, { path: url, query: '' });
      assert.equal(decision.kind, 'pass', `${template} is served`);
      assert.ok(
        decision.kind === 'pass' && decision.rule !== null && /\.php$/.test(decision.path),
        `${template} reaches a script through a rule: ${JSON.stringify(decision)}`,
      );
      if (decision.kind === 'pass' && decision.rule !== null) reached.add(decision.rule);
    }
    assert.deepEqual(
      [...scriptRules].filter((i) => !reached.has(i)).map((i) => rules.rules[i]?.source.pattern),
      [],
      'every rule that leads to a script has its address in the document',
    );
    const documented = Object.keys(spec.paths)
      .filter((p) => p.endsWith('.php'))
      .map((p) => p.slice(1, -4))
      .sort();
    assert.deepEqual(documented, [...scripts].sort(), 'every script has its own address in the document');
  });

  test('each operation is what the script answers: a method the document lists is allowed, one it leaves out is 405', async () => {
    const methods = ['get', 'post', 'put', 'delete'];
    for (const [template, item] of Object.entries(spec.paths)) {
      if (template.endsWith('.php')) continue;
      const listed = methods.filter((m) => m in item);
      const res = await fetch(server.origin + (examples(template)[0] as string), { method: 'OPTIONS' });
      const allow = (res.headers.get('allow') ?? '')
        .toLowerCase()
        .split(', ')
        .filter((m) => methods.includes(m));
      assert.deepEqual(allow.sort(), listed.sort(), `${template}: Allow ${res.headers.get('allow')}`);
    }
  });

  test('the schemas it refers to are served', async () => {
    const refs = new Set(
      [...JSON.stringify(spec).matchAll(/"(?:\$ref|url)":"([^"#]+\/schema\/[^"]+)"/g)].map((m) => m[1] as string),
    );
    assert.ok(refs.size >= 10, `schemas referred to: ${refs.size}`);
    for (const ref of refs) {
      const res = await fetch(ref);
      assert.equal(res.status, 200, ref);
      await res.arrayBuffer();
    }
  });
});
