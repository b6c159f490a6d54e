// buildXml (lib/render/document.ts) on its own: what scripts hand it is a plain tree with '@_' attributes;
// what comes out must be well-formed whatever the strings hold. And the templates' escaping.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';
import ejs from 'ejs';
import { buildXml, escapeHtml } from '../../lib/render/index.ts';
import { missingTool } from '../helpers.ts';

describe('buildXml', () => {
  test('escapes markup in text and attribute values, writes attributes in order and leaves out empty ones', () => {
    const xml = buildXml({
      werk: {
        '@_ref': 'http://localhost/werk/7?a=1&b="2"',
        '@_ueberfaellig': true,
        '@_leer': undefined,
        '@_nichts': null,
        titel: "<script>alert('x')</script> & mehr",
        jahr: 1999,
        person: { '@_ref': 'http://localhost/person/max-muster', '#text': 'Max <Muster>' },
        bild: { '@_ref': '/img/x.svg' },
        fehlt: null,
      },
    });
    assert.equal(
      xml,
      [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<werk ref="http://localhost/werk/7?a=1&amp;b=&quot;2&quot;" ueberfaellig="true">',
        '  <titel>&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; &amp; mehr</titel>',
        '  <jahr>1999</jahr>',
        '  <person ref="http://localhost/person/max-muster">Max &lt;Muster&gt;</person>',
        '  <bild ref="/img/x.svg"/>',
        '  <fehlt/>',
        '</werk>',
        '',
      ].join('\n'),
    );
  });

  test('replaces characters XML forbids, in text and attributes, and keeps surrogate pairs', () => {
    const xml = buildXml({
      a: { '@_x': 'a\u0001b\uFFFE', '#text': 'lone \uD800 and \uDC00, pair 😀, tab\tand newline\n' },
    });
    assert.equal(
      xml,
      '<?xml version="1.0" encoding="UTF-8"?>\n<a x="a\uFFFDb\uFFFD">lone \uFFFD and \uFFFD, pair 😀, tab\tand newline\n</a>\n',
    );
  });

  test('what it makes of forbidden characters is well-formed for xmllint', {
    skip: missingTool('/usr/bin/xmllint', 'libxml2-utils'),
  }, () => {
    const xml = buildXml({ a: { '@_x': 'a\u0001b\uFFFE', '#text': 'lone \uD800 and \uDC00, pair 😀 <&>' } });
    assert.doesNotThrow(() =>
      execFileSync('xmllint', ['--noout', '-'], { input: xml, stdio: ['pipe', 'pipe', 'pipe'] }),
    );
  });

  test('lists: repeated elements, each with its attributes', () => {
    const xml = buildXml({
      werke: {
        werk: [
          { '@_ref': '/werk/1', '#text': 'Eins' },
          { '@_ref': '/werk/2', '#text': 'Zwei' },
        ],
      },
    });
    assert.equal(
      xml,
      '<?xml version="1.0" encoding="UTF-8"?>\n<werke>\n  <werk ref="/werk/1">Eins</werk>\n  <werk ref="/werk/2">Zwei</werk>\n</werke>\n',
    );
  });
});

describe('escapeHtml', () => {
  test("writes what ejs's own escaping writes, for text with and without markup and for other values", () => {
    const values = [
      '',
      'plain',
      'Müller & Söhne',
      `<script>alert("x")</script>`,
      "it's",
      '&amp;',
      0,
      42,
      true,
      null,
      undefined,
      { toString: () => '<o>' },
    ];
    for (const value of values) assert.equal(escapeHtml(value), ejs.escapeXML(value as string), String(value));
  });
});
