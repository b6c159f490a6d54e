// Made-up but German-looking persons and works for the data generator and the benchmark:
// names and titles drawn from word lists by a seeded generator, so a seed always gives the
// same rows and a search term hits a realistic share of them (a noun about 1 title in 100).

/** mulberry32: a small, fast, seedable generator; the same seed gives the same sequence. */
export function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(random: () => number, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)] as T;
}

const firstNames = [
  'Anna',
  'Ben',
  'Clara',
  'David',
  'Emma',
  'Felix',
  'Greta',
  'Hannes',
  'Ida',
  'Jonas',
  'Karla',
  'Lukas',
  'Marie',
  'Niklas',
  'Oskar',
  'Paula',
  'Quirin',
  'Rosa',
  'Simon',
  'Theresa',
  'Ulrich',
  'Vera',
  'Wilhelm',
  'Xaver',
  'Yvonne',
  'Zoe',
  'Jürgen',
  'Käthe',
  'Sören',
  'Björn',
  'Jörg',
  'Dörte',
  'Günther',
  'Hildegard',
  'Ingrid',
  'Konrad',
  'Leonie',
  'Mathilde',
  'Friederike',
  'Elisabeth',
  'Anton',
  'Bärbel',
  'Carsten',
  'Dagmar',
  'Eberhard',
  'Frauke',
  'Gerda',
  'Heiko',
  'Irmgard',
  'Jannik',
  'Katrin',
  'Lothar',
  'Magdalena',
  'Norbert',
  'Ottilie',
  'Renate',
  'Sabine',
  'Torsten',
  'Ursula',
  'Volker',
  'Wiebke',
  'Agnes',
  'Bernd',
  'Christoph',
  'Dorothea',
  'Emil',
  'Franziska',
  'Gisela',
  'Helmut',
  'Johanna',
  'Karl',
  'Lieselotte',
  'Moritz',
  'Nele',
  'Otto',
  'Pia',
  'Rainer',
  'Swantje',
  'Till',
  'Uwe',
  'Waltraud',
  'Anna-Lena',
  'Hans-Peter',
  'Maria Theresia',
  'Jörn',
  'Malte',
  'Henrike',
  'Fiete',
  'Levin',
  'Merle',
  'Detlef',
  'Gesine',
  'Ole',
  'Tjark',
];

const lastNames = [
  'Müller',
  'Schmidt',
  'Schneider',
  'Fischer',
  'Weber',
  'Meyer',
  'Wagner',
  'Becker',
  'Schulz',
  'Hoffmann',
  'Schäfer',
  'Koch',
  'Bauer',
  'Richter',
  'Klein',
  'Wolf',
  'Schröder',
  'Neumann',
  'Schwarz',
  'Zimmermann',
  'Braun',
  'Krüger',
  'Hofmann',
  'Hartmann',
  'Lange',
  'Schmitt',
  'Werner',
  'Schmitz',
  'Krause',
  'Meier',
  'Lehmann',
  'Schmid',
  'Schulze',
  'Maier',
  'Köhler',
  'Herrmann',
  'König',
  'Walter',
  'Mayer',
  'Huber',
  'Kaiser',
  'Fuchs',
  'Peters',
  'Lang',
  'Scholz',
  'Möller',
  'Weiß',
  'Jung',
  'Hahn',
  'Schubert',
  'Vogel',
  'Friedrich',
  'Keller',
  'Günther',
  'Frank',
  'Berger',
  'Winkler',
  'Roth',
  'Beck',
  'Lorenz',
  'Baumann',
  'Franke',
  'Albrecht',
  'Schuster',
  'Simon',
  'Ludwig',
  'Böhm',
  'Winter',
  'Kraus',
  'Martin',
  'Schumacher',
  'Krämer',
  'Vogt',
  'Stein',
  'Jäger',
  'Otto',
  'Sommer',
  'Groß',
  'Seidel',
  'Heinrich',
  'Brandt',
  'Haas',
  'Schreiber',
  'Graf',
  'Schulte',
  'Dietrich',
  'Ziegler',
  'Kuhn',
  'Kühn',
  'Pohl',
  'Engel',
  'Horn',
  'Busch',
  'Bergmann',
  'Thomas',
  'Voigt',
  'Sauer',
  'Arnold',
  'Wolff',
  'Pfeiffer',
  'Öztürk',
  'Hölzl',
  'Brandstätter',
  'Sommerfeld',
  'Strauß',
  'Baumgärtner',
  'von Bülow',
  'zu Dohna',
  'Lindqvist',
  'Nowak',
  'Kowalski',
  'Petersen',
];

/** Nouns with their gender, for adjective endings: Stiller Hafen, Stille Nacht, Stilles Meer. */
const nouns: readonly (readonly [string, 'm' | 'f' | 'n'])[] = [
  ['Hafen', 'm'],
  ['Nebel', 'm'],
  ['Wald', 'm'],
  ['Fluss', 'm'],
  ['Himmel', 'm'],
  ['Garten', 'm'],
  ['Brief', 'm'],
  ['Traum', 'm'],
  ['Sommer', 'm'],
  ['Winter', 'm'],
  ['Abend', 'm'],
  ['Morgen', 'm'],
  ['Wind', 'm'],
  ['Stein', 'm'],
  ['Turm', 'm'],
  ['Weg', 'm'],
  ['Spiegel', 'm'],
  ['Schatten', 'm'],
  ['Regen', 'm'],
  ['Schnee', 'm'],
  ['Mond', 'm'],
  ['Vogel', 'm'],
  ['Acker', 'm'],
  ['Deich', 'm'],
  ['Bahnhof', 'm'],
  ['Leuchtturm', 'm'],
  ['Kranich', 'm'],
  ['Nacht', 'f'],
  ['Stadt', 'f'],
  ['Straße', 'f'],
  ['Brücke', 'f'],
  ['Küste', 'f'],
  ['Stille', 'f'],
  ['Reise', 'f'],
  ['Erinnerung', 'f'],
  ['Landschaft', 'f'],
  ['Mühle', 'f'],
  ['Insel', 'f'],
  ['Wiese', 'f'],
  ['Quelle', 'f'],
  ['Stunde', 'f'],
  ['Zeit', 'f'],
  ['Heimat', 'f'],
  ['Ernte', 'f'],
  ['Flut', 'f'],
  ['Sonne', 'f'],
  ['Welle', 'f'],
  ['Kirche', 'f'],
  ['Werkstatt', 'f'],
  ['Fähre', 'f'],
  ['Lichtung', 'f'],
  ['Düne', 'f'],
  ['Schwester', 'f'],
  ['Meer', 'n'],
  ['Licht', 'n'],
  ['Haus', 'n'],
  ['Feld', 'n'],
  ['Dorf', 'n'],
  ['Fenster', 'n'],
  ['Lied', 'n'],
  ['Gedicht', 'n'],
  ['Bild', 'n'],
  ['Ufer', 'n'],
  ['Gewitter', 'n'],
  ['Moor', 'n'],
  ['Tal', 'n'],
  ['Schiff', 'n'],
  ['Atelier', 'n'],
  ['Echo', 'n'],
  ['Wasser', 'n'],
  ['Jahr', 'n'],
  ['Gesicht', 'n'],
  ['Zimmer', 'n'],
  ['Land', 'n'],
];

const adjectives = [
  'still',
  'düster',
  'hell',
  'alt',
  'neu',
  'leer',
  'fern',
  'nah',
  'kalt',
  'warm',
  'grün',
  'blau',
  'rot',
  'grau',
  'weiß',
  'schwarz',
  'golden',
  'verloren',
  'vergessen',
  'verborgen',
  'leise',
  'laut',
  'spät',
  'früh',
  'klein',
  'groß',
  'wild',
  'sanft',
  'schwer',
  'leicht',
  'offen',
  'fremd',
  'müde',
  'wach',
  'zerbrochen',
  'gläsern',
];

const places = [
  'Lübeck',
  'Dresden',
  'Görlitz',
  'Husum',
  'Bamberg',
  'Weimar',
  'Passau',
  'Stralsund',
  'Tübingen',
  'Lüneburg',
  'Quedlinburg',
  'Wismar',
  'Konstanz',
  'Bautzen',
  'Flensburg',
  'Münster',
  'Würzburg',
  'Cuxhaven',
  'Rügen',
  'Sylt',
  'Föhr',
  'Ahrenshoop',
  'Worpswede',
  'Meißen',
  'Rothenburg',
  'Erfurt',
  'Kassel',
  'Bremen',
  'Köln',
  'Kiel',
];

const seasons = [
  'im Winter',
  'im Sommer',
  'im Herbst',
  'im Frühling',
  'im Morgengrauen',
  'im Abendlicht',
  'im Regen',
  'bei Nacht',
];
const kinds = [
  'Gemälde',
  'Fotografie',
  'Roman',
  'Erzählband',
  'Gedichtband',
  'Skulptur',
  'Installation',
  'Holzschnitt',
  'Radierung',
  'Komposition',
  'Aquarell',
  'Keramik',
  'Textilkunst',
  'Dokumentarfilm',
  'Essay',
  'Hörspiel',
];
const romans = ['I', 'II', 'III', 'IV', 'V', 'VI', 'VII', 'VIII', 'IX', 'X'];
const articles = { m: 'Der', f: 'Die', n: 'Das' } as const;
const endings = { m: 'er', f: 'e', n: 'es' } as const;

/** Words that occur in titles, for the benchmark's search terms. */
export const titleNouns: readonly string[] = nouns.map(([noun]) => noun);
export const titleAdjectives: readonly string[] = adjectives;
/** The places of the titles' "… von <place>". */
export const titlePlaces: readonly string[] = places;

export function makeTitle(random: () => number): string {
  const [noun, gender] = pick(random, nouns);
  const adjective = pick(random, adjectives);
  // Strong ending without an article (Stilles Meer), weak -e after one (Das stille Meer).
  const stem = adjective.endsWith('e') ? adjective.slice(0, -1) : adjective;
  const strong = `${stem[0]?.toUpperCase()}${stem.slice(1)}${endings[gender]}`;
  switch (Math.floor(random() * 6)) {
    case 0:
      return `${strong} ${noun}`;
    case 1:
      return `${articles[gender]} ${noun} von ${pick(random, places)}`;
    case 2:
      return `${noun} und ${pick(random, nouns)[0]}`;
    case 3:
      return `${strong} ${noun} ${pick(random, seasons)}`;
    case 4:
      return `${noun} ${pick(random, romans)}`;
    default:
      return `${articles[gender]} ${stem}e ${noun}`;
  }
}

export function makeDescription(random: () => number, titel: string, art: string): string {
  return `${art} aus der Reihe „${titel}“, entstanden in ${pick(random, places)}; ${pick(random, ['frühe', 'späte', 'große', 'kleine', 'zentrale'])} Arbeit.`;
}

export function makeKind(random: () => number): string {
  return pick(random, kinds);
}

export function makeName(random: () => number): { vorname: string; nachname: string } {
  return { vorname: pick(random, firstNames), nachname: pick(random, lastNames) };
}

/** max-muster: lower case ASCII, umlauts spelled out, words joined by single hyphens. */
export function slugify(text: string): string {
  return text
    .toLowerCase()
    .replace(/ä/g, 'ae')
    .replace(/ö/g, 'oe')
    .replace(/ü/g, 'ue')
    .replace(/ß/g, 'ss')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}
