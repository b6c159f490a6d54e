// writeXml (lib/render/xml.ts) against its reference, fast-xml-parser's XMLBuilder with the options
// the site used before: the same tree must give the same bytes, for the shapes the scripts
// hand over and for a few thousand random trees.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { XMLBuilder, type XmlBuilderOptions } from 'fast-xml-parser';
import { createRandom } from '../../bin/lib/sample-data.ts';
import { escapeXml, writeXml } from '../../lib/render/index.ts';

const builder = new XMLBuilder({
  ignoreAttributes: false,
  attributesGroupName: '$',
  attributeNamePrefix: '',
  textNodeName: '#text',
  format: true,
  indentBy: '  ',
  suppressEmptyNode: true,
  suppressBooleanAttributes: false,
  processEntities: false,
} as XmlBuilderOptions);

/** The builder's input: every string escaped and a node's '@_name' keys in its attribute group. */
function builderTree(node: unknown): unknown {
  if (typeof node === 'string') return escapeXml(node);
  if (node === null || typeof node !== 'object') return node;
  if (Array.isArray(node)) return node.map(builderTree);
  const copy: Record<string, unknown> = {};
  let attributes: Record<string, unknown> | undefined;
  for (const [key, child] of Object.entries(node)) {
    const value = builderTree(child);
    if (!key.startsWith('@_')) copy[key] = value;
    else if (value !== undefined && value !== null) (attributes ??= {})[key.slice(2)] = value;
  }
  if (attributes) copy.$ = attributes;
  return copy;
}

const reference = (tree: Record<string, unknown>) => builder.build(builderTree(tree)) as string;

describe('writeXml', () => {
  const shapes: Record<string, Record<string, unknown>> = {
    'a person with works': {
      person: {
        image: { '@_ref': 'http://localhost/img/person.svg' },
        vorname: 'Max',
        nachname: 'Müller & Söhne',
        username: 'mmuster',
        werke: {
          werk: [
            { '@_ref': 'http://localhost/werk/1', '#text': 'Eins <zwei>' },
            { '@_ref': 'http://localhost/werk/2', '#text': "Drei's" },
          ],
        },
      },
    },
    'a person without works': {
      person: { image: { '@_ref': '/img/x.svg' }, vorname: 'A', nachname: 'B', username: 'ab', werke: { werk: [] } },
    },
    'a list page with paging links': {
      personen: {
        '@_ref': 'http://localhost/personen?offset=50',
        '@_total': 120,
        '@_offset': 50,
        '@_limit': 50,
        previous: { '@_ref': 'http://localhost/personen' },
        next: { '@_ref': 'http://localhost/personen?offset=100' },
        person: [{ '@_ref': 'http://localhost/person/a', '@_werke': 0, vorname: 'A', nachname: 'B' }],
      },
    },
    'a loan list with boolean-like attributes': {
      entlehnte: {
        '@_ref': 'http://localhost/entlehnte/2',
        benutzer: { '@_name': 'leser', '@_ref': undefined },
        werk: [
          {
            '@_ref': '/werk/3',
            '@_seit': '2026-11-01',
            '@_bis': null,
            '@_ueberfaellig': 'false',
            titel: 'T',
            person: { '@_ref': '/person/x', '#text': 'X Y' },
          },
        ],
      },
    },
    'a problem document': {
      problem: {
        '@_xmlns': 'urn:ietf:rfc:7807',
        type: 'about:blank',
        title: 'Not Found',
        status: 404,
        detail: '',
        errors: { error: [{ '@_field': 'titel', '#text': 'Required.' }] },
      },
    },
    'numbers, booleans, null, empty strings and forbidden characters': {
      a: {
        n: 0,
        m: -0,
        f: 1.5,
        t: true,
        no: false,
        nil: null,
        leer: '',
        gone: undefined,
        ctl: 'a\u0001b\uFFFE \uD800 😀',
        at: { '@_x': '', '@_y': true, '@_z': -0 },
      },
    },
    'text beside child elements': { a: { '#text': 'vor', b: 'x', c: { '#text': 'y', '@_k': 'v' } } },
  };
  for (const [name, tree] of Object.entries(shapes)) {
    test(`writes what fast-xml-parser's builder writes: ${name}`, () => {
      assert.equal(writeXml(tree), reference(tree));
    });
  }

  test('writes what the builder writes for 3,000 random trees', () => {
    const random = createRandom(20261121);
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)] as T;
    const names = ['a', 'werk', 'titel', 'person', 'x-y', 'ns:el'];
    const strings = [
      '',
      'text',
      'a & b',
      '<tag>',
      '"quoted"',
      "it's",
      'tab\tline\n',
      'nul\u0000',
      'pair 😀',
      'lone \uDC00',
      'ümlaut',
    ];
    const primitive = () => pick<unknown>([pick(strings), pick(strings), 0, -0, 42, 3.25, true, false, null]);
    const node = (depth: number): unknown => {
      const roll = random();
      if (depth >= 4 || roll < 0.3) return primitive();
      if (roll < 0.45)
        return Array.from({ length: Math.floor(random() * 4) }, () => (random() < 0.1 ? undefined : item(depth + 1)));
      const object: Record<string, unknown> = {};
      for (let i = Math.floor(random() * 5); i > 0; i--) {
        const kind = random();
        if (kind < 0.3)
          object[`@_${pick(names).replace(':', '')}${i}`] = pick<unknown>([...strings, 7, true, null, undefined]);
        else if (kind < 0.4) object['#text'] = pick<unknown>([...strings, 0, 12, false]);
        else object[pick(names)] = node(depth + 1);
      }
      return object;
    };
    // A list's items are elements or text, never lists: writeXml refuses those (next test). Nor
    // null: the builder writes a list's null items ahead of the others, writeXml keeps the order.
    const item = (depth: number): unknown => {
      const value = node(depth);
      return Array.isArray(value) ? { a: value } : (value ?? 'x');
    };
    for (let i = 0; i < 3000; i++) {
      const tree = { [pick(names)]: node(0) };
      assert.equal(writeXml(tree), reference(tree), `tree ${i}: ${JSON.stringify(tree)}`);
    }
  });

  test('keeps empty items of a list in their place', () => {
    assert.equal(writeXml({ a: { b: ['x', null, 'y'] } }), '<a>\n  <b>x</b>\n  <b/>\n  <b>y</b>\n</a>\n');
  });

  test('refuses a list inside a list, which has no XML form', () => {
    assert.throws(() => writeXml({ a: { b: [['x']] } }), /<b>: a list inside a list has no XML form/);
  });
});
