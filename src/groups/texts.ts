// A group's texts as its administrators edit them (contract §13: PATCH /api/group/{id}/texts): the
// body checked field by field in DRF's words, with §4's limits, and the fields a directory-synced
// group takes from the directory refused.
import { codePointLength } from '../auth/username.ts';
import type { GroupTexts } from '../store/group-types.ts';
import { GROUP_LIMITS } from '../store/limits.ts';
import { unstorableText } from './import-fields.ts';

/** The texts an administrator may edit. */
const EDITABLE_TEXTS = ['description', 'short_description', 'activities'] as const;
export type EditableText = (typeof EDITABLE_TEXTS)[number];

const EDITABLE: ReadonlySet<string> = new Set(EDITABLE_TEXTS);

/** The body as texts to write, DRF field errors, or not an object at all. */
export type TextsInput =
  | { readonly kind: 'texts'; readonly texts: GroupTexts }
  | { readonly kind: 'invalid'; readonly fields: Record<string, string[]> }
  | { readonly kind: 'not_a_dictionary' };

/** Checks a PATCH body: any of the editable texts, strings within §4's limits, nothing else. */
export function parseTexts(body: unknown): TextsInput {
  if (body === undefined || body === null) return { kind: 'texts', texts: {} };
  if (typeof body !== 'object' || Array.isArray(body)) return { kind: 'not_a_dictionary' };
  const fields: Record<string, string[]> = {};
  const texts: Record<string, string> = {};
  for (const [field, value] of Object.entries(body)) {
    if (!EDITABLE.has(field)) {
      fields[field] = ['This field cannot be changed here.'];
      continue;
    }
    const limit = GROUP_LIMITS[field as EditableText];
    if (value === null) fields[field] = ['This field may not be null.'];
    else if (typeof value !== 'string') fields[field] = ['Not a valid string.'];
    else if (unstorableText(value) !== null) fields[field] = ['Enter a valid value.'];
    else if (codePointLength(value) > limit) {
      fields[field] = [`Ensure this field has no more than ${limit} characters.`];
    } else texts[field] = value;
  }
  if (Object.keys(fields).length > 0) return { kind: 'invalid', fields };
  return { kind: 'texts', texts };
}

/**
 * The texts the group sync fills from the directory (contract §11, §13): the description always,
 * the others when the settings name an attribute for them. Without the sync's settings, this
 * process cannot know which: all three.
 */
export function textsFromDirectory(
  attributes: {
    readonly shortDescriptionAttribute: string | null;
    readonly activitiesAttribute: string | null;
  } | null,
): ReadonlySet<EditableText> {
  if (attributes === null) return new Set(EDITABLE_TEXTS);
  const texts = new Set<EditableText>(['description']);
  if (attributes.shortDescriptionAttribute !== null) texts.add('short_description');
  if (attributes.activitiesAttribute !== null) texts.add('activities');
  return texts;
}

/**
 * contract §13: the texts of a synced group can be edited unless the sync fills that field from an
 * attribute; the field errors for those `texts` names, or null.
 */
export function directoryTextErrors(
  texts: GroupTexts,
  fromDirectory: ReadonlySet<EditableText>,
): Record<string, string[]> | null {
  const refused = EDITABLE_TEXTS.filter((field) => texts[field] !== undefined && fromDirectory.has(field));
  if (refused.length === 0) return null;
  return Object.fromEntries(refused.map((field) => [field, ['This field is managed by the directory.']]));
}
