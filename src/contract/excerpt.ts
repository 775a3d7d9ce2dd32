/**
 * How any door quotes what a client sent back to it: a short, escaped excerpt, never the raw input.
 * An error that echoes a request verbatim turns the server into a reflector (log injection, content
 * injection in a page that shows the message, megabytes copied into every refusal); an excerpt of
 * at most `max` characters, JSON-escaped (quotes, control characters, line breaks and non-ASCII as
 * escapes), names the place without any of that.
 */

/** Characters of input an error may quote. */
export const EXCERPT_CHARS = 32;

/** `"abc\n…"`: at most `max` characters of `text`, starting at `from`, escaped, with an ellipsis where cut. */
export function excerpt(text: string, from = 0, max = EXCERPT_CHARS): string {
  const start = Math.max(0, Math.min(from, text.length));
  const cut = text.slice(start, start + max);
  const escaped = JSON.stringify(cut).slice(1, -1).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `"${start > 0 ? '…' : ''}${escaped}${start + max < text.length ? '…' : ''}"`;
}
