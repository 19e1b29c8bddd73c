// The text the group search matches (contract §13: `q` matches name, short_description and
// description, case- and accent-insensitively). One function folds both what is stored
// (groups.search_text, sql/group-search.ts) and what is asked (groups/search.ts), in JavaScript, so SQLite and
// PostgreSQL compare the same code points and give the same results whatever their collations,
// ICU or locale (neither engine folds accents by itself in a way the other shares).

/** A group's texts as the search matches them. */
export interface SearchedTexts {
  readonly name: string;
  readonly short_description: string;
  readonly description: string;
}

const MARKS = /\p{M}+/gu;
const SPACES = /\s+/gu;

/**
 * Case- and accent-insensitive form of `text`: compatibility decomposition (NFKD: ﬁ → fi, ² → 2,
 * full-width → ASCII), combining marks removed (é → e), full case folding (upper then lower case:
 * ß → ss), every run of white space one space, trimmed.
 */
export function foldForSearch(text: string): string {
  const bare = text.normalize('NFKD').replace(MARKS, '');
  // Upper then lower case, then marks again: 'İ' lowers to 'i' and a combining dot.
  return bare.toUpperCase().toLowerCase().normalize('NFKD').replace(MARKS, '').replace(SPACES, ' ').trim();
}

/**
 * The stored search text of a group: its folded name first, so that ordering by this text orders by
 * name (a line break sorts before every folded character), then the two descriptions.
 */
export function groupSearchText(group: SearchedTexts): string {
  return `${foldForSearch(group.name)}\n${foldForSearch(group.short_description)}\n${foldForSearch(group.description)}`;
}

/**
 * The distinct trigrams of a folded text: every run of three consecutive code points, as SQLite's
 * FTS5 trigram tokenizer cuts them (sql/group-search.ts). Empty for a text shorter than three.
 */
export function searchTrigrams(folded: string): string[] {
  const points = Array.from(folded);
  const found = new Set<string>();
  for (let i = 0; i + 3 <= points.length; i++) found.add(points[i]! + points[i + 1]! + points[i + 2]!);
  return [...found];
}
