// The benchmark's hand-written baselines (bench/baseline.ts, both styles) must give the very
// documents the product gives, or the benchmark compares different work; their search is the
// site's former substring search, whose hits the product must still find.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { QueryFn } from '../bench/baseline.ts';
import { createBaseline } from '../bench/baseline.ts';
import type { TestServer } from './helpers.ts';
import { startTestServer } from './helpers.ts';

for (const style of ['strong', 'reference'] as const)
  describe(`benchmark baseline (${style})`, () => {
    let product: TestServer;
    let baseline: http.Server;
    let baselineOrigin: string;

    before(async () => {
      product = await startTestServer();
      const query: QueryFn = (sql, params, name) => product.db.query(sql, params, name ? { name } : undefined);
      baseline = http.createServer(createBaseline(query, style));
      await new Promise<void>((resolve) => baseline.listen(0, '127.0.0.1', resolve));
      baselineOrigin = `http://127.0.0.1:${(baseline.address() as AddressInfo).port}`;
    });
    after(async () => {
      baseline.closeAllConnections();
      await new Promise((resolve) => baseline.close(resolve));
      await product.close();
    });

    /** Both bodies with each server's origin written as ORIGIN. */
    async function fetchBoth(target: string): Promise<[string, string]> {
      const [a, b] = await Promise.all([fetch(product.origin + target), fetch(baselineOrigin + target)]);
      assert.equal(a.status, 200, `product ${target}`);
      assert.equal(b.status, 200, `baseline ${target}`);
      assert.equal(b.headers.get('content-type'), a.headers.get('content-type'));
      return [
        (await a.text()).replaceAll(product.origin, 'ORIGIN'),
        (await b.text()).replaceAll(baselineOrigin, 'ORIGIN'),
      ];
    }

    for (const suffix of ['json', 'xml', 'html']) {
      test(`gives the product's person document in ${suffix.toUpperCase()}, byte for byte`, async () => {
        // Jürgen Müller's works have quotes, umlauts and ß in their titles.
        const [productBody, baselineBody] = await fetchBoth(`/person/juergen-mueller.${suffix}`);
        assert.equal(baselineBody, productBody);
        assert.ok(productBody.includes('Gesichter einer Straße'));
      });
    }

    test("gives the product's first page of the person list in JSON", async () => {
      const [productBody, baselineBody] = await fetchBoth('/personen.json');
      assert.equal(baselineBody, productBody);
      assert.equal(JSON.parse(productBody).total, 14);
    });

    // The baseline's search is the site's former one, substrings of names and titles: every
    // link to it must still find what it found (docs/interface.md, Search).
    for (const condition of [
      'any,contains,müller',
      'any,contains,üll',
      'any,contains,haus',
      'title,contains,schicht',
      'title,begins_with,nacht',
      'any,begins_with,jür',
    ]) {
      test(`finds at least what the former substring search found for ${condition}`, async () => {
        const [, baselineBody] = await fetchBoth(`/search.json?query=${encodeURIComponent(condition)}`);
        const former = JSON.parse(baselineBody) as { total: number; treffer: { url: string }[] };
        assert.ok(former.total > 0 && former.total <= 10, `${condition}: ${former.total} hits before`);
        const found = new Set<string>();
        for (let offset = 0; offset < 100; offset += 10) {
          const res = await fetch(
            `${product.origin}/search.json?query=${encodeURIComponent(condition)}&offset=${offset}`,
          );
          const page = (await res.json()) as { total: number; treffer: { url: string }[] };
          for (const hit of page.treffer) found.add(hit.url.replace(product.origin, 'ORIGIN'));
          if (offset + 10 >= page.total) break;
        }
        for (const hit of former.treffer) assert.ok(found.has(hit.url), `${condition}: ${hit.url} is no longer found`);
      });
    }

    test('gives a person without works as the product does', async () => {
      await product.db.query(
        `INSERT INTO person (slug, vorname, nachname, username, image) VALUES ($1, 'Ohne', 'Werke', $1, '/img/person.svg') ON CONFLICT DO NOTHING`,
        ['ohne-werke'],
      );
      for (const suffix of ['json', 'xml', 'html']) {
        const [productBody, baselineBody] = await fetchBoth(`/person/ohne-werke.${suffix}`);
        assert.equal(baselineBody, productBody);
      }
    });

    test('answers 404 for an unknown slug', async () => {
      assert.equal((await fetch(`${baselineOrigin}/person/niemand.json`)).status, 404);
    });
  });
