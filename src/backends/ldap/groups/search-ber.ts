// The answers of a search that the group sync reads itself (paged-search.ts), beyond the envelope
// the frame guard vets (ber.ts): a SearchResultEntry's name and attributes (RFC 4511 §4.5.2) and
// the cookie of the paged results control (RFC 2696) in a SearchResultDone. Read straight from the
// frame into strings: ldapts's parser builds a message object, an Attribute per attribute and a
// Buffer per value, then copies them into a plain object, which measured 90–130 ms of CPU for the
// 20 000 entries of the bench's directory where this reading takes 20 ms. Bounded like ber.ts: a
// malformed element is a result, never an exception.
import { type Element, type Parsed, readElement } from '../ber.ts';

/** One attribute of an entry: its type in lower case, its values. */
export interface EntryAttribute {
  readonly type: string;
  /** UTF-8 text, or the bytes for a type asked for as binary (objectGUID). */
  readonly values: readonly (string | Buffer)[];
}

export interface SearchEntry {
  readonly dn: string;
  readonly attributes: readonly EntryAttribute[];
}

const bad = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

/** `element` read at `at` inside `limit` with tag `tag`, or null. */
function expect(frame: Buffer, at: number, limit: number, tag: number): Element | null {
  const element = readElement(frame, at, limit);
  return element.ok && element.value.tag === tag ? element.value : null;
}

/** RFC 4511 §4.5.2: SearchResultEntry ::= SEQUENCE { objectName, attributes PartialAttributeList }. */
export function readSearchEntry(
  frame: Buffer,
  op: Element,
  binary: ReadonlySet<string>,
): Parsed<SearchEntry> {
  const name = expect(frame, op.start, op.end, 0x04);
  if (name === null) return bad('an entry without its objectName');
  const list = expect(frame, name.end, op.end, 0x30);
  if (list === null || list.end !== op.end) return bad('an entry without its attribute list');
  const attributes: EntryAttribute[] = [];
  for (let at = list.start; at < list.end; ) {
    // PartialAttribute ::= SEQUENCE { type AttributeDescription, vals SET OF value }
    const attribute = expect(frame, at, list.end, 0x30);
    const type = attribute === null ? null : expect(frame, attribute.start, attribute.end, 0x04);
    const set = attribute === null || type === null ? null : expect(frame, type.end, attribute.end, 0x31);
    if (attribute === null || type === null || set === null || set.end !== attribute.end)
      return bad('an attribute that is not a type and a set of values');
    const typeName = frame.toString('utf8', type.start, type.end).toLowerCase();
    const bytes = binary.has(typeName);
    const values: (string | Buffer)[] = [];
    for (let v = set.start; v < set.end; ) {
      const value = expect(frame, v, set.end, 0x04);
      if (value === null) return bad(`a value of ${typeName} that is not an OCTET STRING`);
      values.push(
        bytes
          ? Buffer.from(frame.subarray(value.start, value.end))
          : frame.toString('utf8', value.start, value.end),
      );
      v = value.end;
    }
    attributes.push({ type: typeName, values });
    at = attribute.end;
  }
  return { ok: true, value: { dn: frame.toString('utf8', name.start, name.end), attributes } };
}

const PAGED_RESULTS_OID = '1.2.840.113556.1.4.319';
const NO_COOKIE = Buffer.alloc(0);

/**
 * The cookie of the paged results control among a SearchResultDone's controls (the envelope, read by
 * the guard, ends with them); empty when there is none: the last page, or a server that did not page.
 */
export function readPagedCookie(frame: Buffer, op: Element): Parsed<Buffer> {
  if (op.end === frame.length) return { ok: true, value: NO_COOKIE };
  const controls = expect(frame, op.end, frame.length, 0xa0);
  if (controls === null) return bad('controls that are not controls');
  for (let at = controls.start; at < controls.end; ) {
    // Control ::= SEQUENCE { controlType, criticality BOOLEAN DEFAULT FALSE, controlValue OPTIONAL }
    const control = expect(frame, at, controls.end, 0x30);
    const type = control === null ? null : expect(frame, control.start, control.end, 0x04);
    if (control === null || type === null) return bad('a control without its type');
    let value: Element | null = null;
    for (let next = type.end; next < control.end; ) {
      const field = readElement(frame, next, control.end);
      if (!field.ok || (field.value.tag !== 0x01 && field.value.tag !== 0x04))
        return bad('a control field that is neither criticality nor value');
      if (field.value.tag === 0x04) value = field.value;
      next = field.value.end;
    }
    if (frame.toString('latin1', type.start, type.end) === PAGED_RESULTS_OID && value !== null) {
      // RFC 2696: realSearchControlValue ::= SEQUENCE { size INTEGER, cookie OCTET STRING }
      const sequence = expect(frame, value.start, value.end, 0x30);
      const size = sequence === null ? null : expect(frame, sequence.start, sequence.end, 0x02);
      const cookie = sequence === null || size === null ? null : expect(frame, size.end, sequence.end, 0x04);
      if (sequence === null || cookie === null || cookie.end !== sequence.end)
        return bad('a paged results control that is not a size and a cookie');
      return { ok: true, value: Buffer.from(frame.subarray(cookie.start, cookie.end)) };
    }
    at = control.end;
  }
  return { ok: true, value: NO_COOKIE };
}
