// The vocabulary's look-ups (lib/search/vocabulary.ts): the words a compound part, a beginning
// or a wildcard stands for, shortest first, with the stems that rule some out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { globMatches, Vocabulary } from '../../lib/search/vocabulary.ts';

function vocabulary(): Vocabulary {
  const v = new Vocabulary();
  const words: [string, string | null][] = [
    ['nachtschicht', 'nachtschicht'],
    ['schicht', 'schicht'],
    ['schichten', 'schicht'],
    ['fruhschicht', 'fruhschicht'],
    ['nacht', 'nacht'],
    ['nachts', 'nacht'],
    ['mitternacht', 'mitternacht'],
    ['oder', null],
    ['ode', 'ode'],
    ['muller', 'mull'],
    ['mueller', 'muell'],
    ['haus', 'haus'],
    ['hauser', 'haus'],
    ['hausboot', 'hausboot'],
  ];
  for (const [word, stem] of words) v.add(word, stem);
  return v;
}

test('a compound part stands for the words it is in, shortest first, leaving out its own stem and stop words', () => {
  const v = vocabulary();
  assert.deepEqual(v.expand({ kind: 'part', word: 'schicht' }, 'schicht', 60), {
    words: ['fruhschicht', 'nachtschicht'],
    more: false,
  });
  assert.deepEqual(v.expand({ kind: 'part', word: 'nacht' }, 'nacht', 60), {
    words: ['mitternacht', 'nachtschicht'],
    more: false,
  });
  // ode is part of oder, a stop word, which is no compound; and a stop word is part of nothing.
  assert.deepEqual(v.expand({ kind: 'part', word: 'ode' }, 'ode', 60), { words: [], more: false });
  assert.deepEqual(v.expand({ kind: 'part', word: 'oder' }, null, 60), { words: [], more: false });
  assert.deepEqual(v.expand({ kind: 'part', word: 'schicht' }, 'schicht', 1), { words: ['fruhschicht'], more: true });
});

test('a beginning and a wildcard stand for the words they match, a word added later included', () => {
  const v = vocabulary();
  assert.deepEqual(v.expand({ kind: 'begins', word: 'haus' }, 'haus', 60), {
    words: ['hauser', 'hausboot'],
    more: false,
  });
  assert.deepEqual(v.expand({ kind: 'wildcard', word: 'nacht*' }, null, 60), {
    words: ['nacht', 'nachts', 'nachtschicht'],
    more: false,
  });
  assert.deepEqual(v.expand({ kind: 'wildcard', word: 'mu?ller' }, null, 60), { words: ['mueller'], more: false });
  assert.deepEqual(v.expand({ kind: 'wildcard', word: 'mu*er' }, null, 60), {
    words: ['muller', 'mueller'],
    more: false,
  });
  v.add('hausa', 'hausa');
  v.add('haus', 'haus');
  assert.deepEqual(v.expand({ kind: 'begins', word: 'haus' }, 'haus', 60), {
    words: ['hausa', 'hauser', 'hausboot'],
    more: false,
  });
  assert.equal(v.stemOf('hauser'), 'haus');
  assert.equal(v.stemOf('oder'), null);
  assert.equal(v.stemOf('hof'), undefined);
});

test('a wildcard is matched in one pass, however many * it has', () => {
  assert.equal(globMatches('nacht*', 'nachtschicht'), true);
  assert.equal(globMatches('mu?ller', 'muller'), false);
  assert.equal(globMatches('m*er', 'muller'), true);
  assert.equal(globMatches('*', ''), true);
  assert.equal(globMatches('a*b*c', 'axxbyyc'), true);
  assert.equal(globMatches('a*b*c', 'axxbyy'), false);
  // Twenty pairs of * and ? before a letter the word does not have: a regular expression tries
  // every way of splitting the word among them, and would not end within this test.
  const word = 'ab' + 'c'.repeat(60);
  assert.equal(globMatches(`ab${'*?'.repeat(20)}q`, word), false);
  assert.equal(globMatches(`ab${'*?'.repeat(20)}c`, word), true);
});
