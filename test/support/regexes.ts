/**
 * Every regular expression literal in a source file, with its place: read by the TypeScript parser
 * (which reads JavaScript too), so a `/` in a string or a comment is never taken for one, and a
 * `new RegExp("...")` with a literal argument counts as well. What a regular expression built from a
 * variable would match cannot be known here: those are listed as dynamic, with their place.
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';

export interface FoundRegex {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly source: string;
  readonly flags: string;
}
export interface FoundDynamic {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly text: string;
}

export function regexesIn(file: string): { readonly literals: FoundRegex[]; readonly dynamic: FoundDynamic[] } {
  const text = readFileSync(file, 'utf8');
  const kind = file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const literals: FoundRegex[] = [];
  const dynamic: FoundDynamic[] = [];
  const at = (n: ts.Node) => {
    const p = sf.getLineAndCharacterOfPosition(n.getStart(sf));
    return { file, line: p.line + 1, col: p.character + 1 };
  };
  const visit = (n: ts.Node): void => {
    if (n.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const raw = n.getText(sf);
      const end = raw.lastIndexOf('/');
      literals.push({ ...at(n), source: raw.slice(1, end), flags: raw.slice(end + 1) });
    } else if ((ts.isNewExpression(n) || ts.isCallExpression(n)) && ts.isIdentifier(n.expression) && n.expression.text === 'RegExp') {
      const [src, flags] = n.arguments ?? [];
      if (src !== undefined && (ts.isStringLiteral(src) || ts.isNoSubstitutionTemplateLiteral(src))) {
        literals.push({ ...at(n), source: src.text, flags: flags !== undefined && ts.isStringLiteral(flags) ? flags.text : '' });
      } else if (src !== undefined) {
        dynamic.push({ ...at(n), text: n.getText(sf).slice(0, 120) });
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return { literals, dynamic };
}
