// A tiny element builder: the client renders with DOM nodes and textContent only, never HTML strings,
// so server data cannot inject markup (and the CSP needs no 'unsafe-inline').

export type Child = Node | string | null | undefined | false;
export type Attributes = Record<string, string | number | boolean | null | undefined>;

/** Creates `<tag>` with attributes (`true` → present, `false`/null/undefined → absent) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    element.setAttribute(name, value === true ? '' : String(value));
  }
  element.append(
    ...children.filter(
      (child): child is Node | string => child !== null && child !== undefined && child !== false,
    ),
  );
  return element;
}
