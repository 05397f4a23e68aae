/**
 * The public API's options arguments, read from the source (no type checker: the TypeScript
 * parser alone, so it takes a second, not the twenty a whole program would): starting at
 * src/api/index.ts, every export is followed through `export { a } from`, `export * as ns from`
 * and imports to its declaration, and every function, arrow function, call signature,
 * constructor and public method (inherited ones included) is looked at. A parameter is an
 * options argument when its type names an `...Options` type or is an inline object type, or
 * when it is called `options`. Inside those types, a property whose type is itself an
 * `...Options` / `...Callbacks` interface or an inline object type is a nested options object.
 *
 * Paths are the public names: "nn.Linear" (its constructor), "data.Dataset.prototype.batch",
 * "nn.fit > callbacks" (a nested object).
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import ts from "typescript";

export interface OptionsSite {
  /** "nn.Linear", "data.Dataset.prototype.batch", "nn.fit > callbacks". */
  path: string;
  /** The 0-based parameter that is the options argument (for nested ones, the outer one's). */
  parameter: number;
  /** The parameter's (or the property's) type as written. */
  type: string;
  /** Its enum options: keys whose type is a union of string literals, with the literals. */
  choices: { key: string; values: string[] }[];
}

const files = new Map<string, ts.SourceFile>();
function parse(file: string): ts.SourceFile {
  let sf = files.get(file);
  if (!sf) {
    sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
    files.set(file, sf);
  }
  return sf;
}

/** "../ops/nn.js" from a file -> its .ts path (or the folder's index.ts). */
function moduleFile(from: string, spec: string): string | null {
  if (!spec.startsWith(".")) return null; // a package: not ours
  const base = resolve(dirname(from), spec).replace(/\.js$/, "");
  for (const candidate of [`${base}.ts`, `${base}/index.ts`]) {
    try {
      readFileSync(candidate);
      return candidate;
    } catch {
      /* next */
    }
  }
  return null;
}

type Decl = { kind: "node"; node: ts.Node; file: string } | { kind: "module"; file: string };

function hasExport(node: ts.Node): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
}

function declName(node: ts.Node): string | undefined {
  if ((ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node) || ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) && node.name) return node.name.text;
  return undefined;
}

/** The declarations named `name` in `file`, local or imported (`exported`: only what the module exports). */
function lookup(file: string, name: string, exported: boolean, seen = new Set<string>()): Decl[] {
  const key = `${file}#${name}#${exported}`;
  if (seen.has(key)) return [];
  seen.add(key);
  const sf = parse(file);
  const out: Decl[] = [];
  for (const st of sf.statements) {
    if (declName(st) === name && (!exported || hasExport(st))) out.push({ kind: "node", node: st, file });
    if (ts.isVariableStatement(st) && (!exported || hasExport(st))) {
      for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name) && d.name.text === name) out.push({ kind: "node", node: d, file });
    }
    if (ts.isExportDeclaration(st)) {
      const target = st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier) ? moduleFile(file, st.moduleSpecifier.text) : null;
      if (!st.exportClause) {
        if (target) out.push(...lookup(target, name, true, seen)); // export * from
      } else if (ts.isNamespaceExport(st.exportClause)) {
        if (st.exportClause.name.text === name && target) out.push({ kind: "module", file: target });
      } else {
        for (const el of st.exportClause.elements) {
          if (el.name.text !== name) continue;
          const original = (el.propertyName ?? el.name).text;
          out.push(...(target ? lookup(target, original, true, seen) : lookup(file, original, false, seen)));
        }
      }
    }
    if (!exported && ts.isImportDeclaration(st) && ts.isStringLiteral(st.moduleSpecifier) && st.importClause?.namedBindings) {
      const target = moduleFile(file, st.moduleSpecifier.text);
      const nb = st.importClause.namedBindings;
      if (!target) continue;
      if (ts.isNamespaceImport(nb)) {
        if (nb.name.text === name) out.push({ kind: "module", file: target });
      } else {
        for (const el of nb.elements) if (el.name.text === name) out.push(...lookup(target, (el.propertyName ?? el.name).text, true, seen));
      }
    }
  }
  return out;
}

/** The names a module exports. */
function exportNames(file: string, seen = new Set<string>()): string[] {
  if (seen.has(file)) return [];
  seen.add(file);
  const names: string[] = [];
  for (const st of parse(file).statements) {
    const n = declName(st);
    if (n && hasExport(st) && !ts.isInterfaceDeclaration(st) && !ts.isTypeAliasDeclaration(st)) names.push(n);
    if (ts.isVariableStatement(st) && hasExport(st)) for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) names.push(d.name.text);
    if (ts.isExportDeclaration(st) && !st.isTypeOnly) {
      const target = st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier) ? moduleFile(file, st.moduleSpecifier.text) : null;
      if (!st.exportClause) {
        if (target) names.push(...exportNames(target, seen));
      } else if (ts.isNamespaceExport(st.exportClause)) names.push(st.exportClause.name.text);
      else for (const el of st.exportClause.elements) if (!el.isTypeOnly) names.push(el.name.text);
    }
  }
  return names;
}

const OPTIONS_TYPE = /\b[A-Z]\w*(Options|Option)\b/;
const NESTED_TYPE = /\b[A-Z]\w*(Options|Callbacks)\b/;

function isOptionsParameter(p: ts.ParameterDeclaration): boolean {
  if (p.dotDotDotToken) return false;
  const type = p.type;
  return (type !== undefined && (OPTIONS_TYPE.test(type.getText()) || ts.isTypeLiteralNode(type))) || (ts.isIdentifier(p.name) && p.name.text === "options");
}

/** The property signatures of a type as written: literals, intersections, Omit<...>/Partial<...>, named interfaces. */
function membersOf(type: ts.TypeNode, file: string, depth = 0): { members: ts.TypeElement[]; file: string }[] {
  if (depth > 6) return [];
  if (ts.isTypeLiteralNode(type)) return [{ members: [...type.members], file }];
  if (ts.isIntersectionTypeNode(type) || ts.isUnionTypeNode(type)) return type.types.flatMap((t) => membersOf(t, file, depth + 1));
  if (ts.isArrayTypeNode(type)) return membersOf(type.elementType, file, depth + 1);
  if (ts.isParenthesizedTypeNode(type)) return membersOf(type.type, file, depth + 1);
  if (ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName)) {
    const name = type.typeName.text;
    if ((name === "Partial" || name === "Readonly") && type.typeArguments?.[0]) return membersOf(type.typeArguments[0], file, depth + 1);
    if (name === "Omit" && type.typeArguments?.length === 2) {
      const omitted = new Set(literalsOf(type.typeArguments[1]!, file) ?? []);
      return membersOf(type.typeArguments[0]!, file, depth + 1).map((g) => ({ ...g, members: g.members.filter((m) => !(m.name && omitted.has(m.name.getText()))) }));
    }
    const out: { members: ts.TypeElement[]; file: string }[] = [];
    for (const d of lookup(file, name, false)) {
      if (d.kind !== "node") continue;
      if (ts.isInterfaceDeclaration(d.node)) {
        out.push({ members: [...d.node.members], file: d.file });
        for (const h of d.node.heritageClauses ?? []) for (const t of h.types) out.push(...membersOf(ts.factory.createTypeReferenceNode(t.expression.getText(), t.typeArguments), d.file, depth + 1));
      } else if (ts.isTypeAliasDeclaration(d.node)) out.push(...membersOf(d.node.type, d.file, depth + 1));
    }
    return out;
  }
  return [];
}

/** The string literals of a type that is a union of them (through aliases and X["key"]), or null. */
function literalsOf(type: ts.TypeNode, file: string, depth = 0): string[] | null {
  if (depth > 6) return null;
  if (ts.isParenthesizedTypeNode(type)) return literalsOf(type.type, file, depth + 1);
  if (ts.isLiteralTypeNode(type)) return ts.isStringLiteral(type.literal) ? [type.literal.text] : null;
  if (ts.isUnionTypeNode(type)) {
    const parts = type.types.filter((t) => t.kind !== ts.SyntaxKind.UndefinedKeyword).map((t) => literalsOf(t, file, depth + 1));
    return parts.every((p) => p !== null) ? parts.flat() as string[] : null;
  }
  if (ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName) && !type.typeArguments) {
    for (const d of lookup(file, type.typeName.text, false)) if (d.kind === "node" && ts.isTypeAliasDeclaration(d.node)) return literalsOf(d.node.type, d.file, depth + 1);
    return null;
  }
  if (ts.isIndexedAccessTypeNode(type) && ts.isLiteralTypeNode(type.indexType) && ts.isStringLiteral(type.indexType.literal)) {
    const key = type.indexType.literal.text;
    for (const { members, file: f } of membersOf(type.objectType, file)) {
      for (const m of members) if (ts.isPropertySignature(m) && m.type && m.name.getText() === key) return literalsOf(m.type, f, depth + 1);
    }
  }
  return null;
}

function choicesOf(type: ts.TypeNode, file: string): { key: string; values: string[] }[] {
  const out: { key: string; values: string[] }[] = [];
  for (const { members, file: f } of membersOf(type, file)) {
    for (const m of members) {
      if (!ts.isPropertySignature(m) || !m.type) continue;
      const values = literalsOf(m.type, f);
      if (values && values.length > 1 && !out.some((c) => c.key === m.name.getText())) out.push({ key: m.name.getText(), values });
    }
  }
  return out;
}

function nestedSites(path: string, parameter: number, type: ts.TypeNode, file: string, out: OptionsSite[], depth = 0): void {
  if (depth > 3) return;
  for (const { members, file: f } of membersOf(type, file)) {
    for (const m of members) {
      if (!ts.isPropertySignature(m) || !m.type || !m.name) continue;
      const text = m.type.getText();
      if (ts.isFunctionTypeNode(m.type) || ts.isIndexedAccessTypeNode(m.type)) continue;
      // an inline object type of optional properties only (one with methods or required keys is data, a model)
      const literal = ts.isTypeLiteralNode(m.type) && m.type.members.every((x) => ts.isPropertySignature(x) && x.questionToken !== undefined);
      if (NESTED_TYPE.test(text) || literal) {
        const p = `${path} > ${m.name.getText()}`;
        out.push({ path: p, parameter, type: text, choices: choicesOf(m.type, f) });
        nestedSites(p, parameter, m.type, f, out, depth + 1);
      }
    }
  }
}

function signatureSites(path: string, params: readonly ts.ParameterDeclaration[], file: string, out: OptionsSite[]): void {
  params.forEach((p, i) => {
    if (!isOptionsParameter(p)) return;
    if (out.some((s) => s.path === path && s.parameter === i)) return; // an overload's twin
    out.push({ path, parameter: i, type: p.type?.getText() ?? "(untyped)", choices: p.type ? choicesOf(p.type, file) : [] });
    if (p.type) nestedSites(path, i, p.type, file, out);
  });
}

function isPublicMember(m: ts.ClassElement): boolean {
  const mods = ts.canHaveModifiers(m) ? (ts.getModifiers(m) ?? []) : [];
  if (mods.some((x) => x.kind === ts.SyntaxKind.PrivateKeyword || x.kind === ts.SyntaxKind.ProtectedKeyword)) return false;
  return !(m.name && ts.isPrivateIdentifier(m.name));
}

function isStatic(m: ts.ClassElement): boolean {
  return ts.canHaveModifiers(m) && (ts.getModifiers(m) ?? []).some((x) => x.kind === ts.SyntaxKind.StaticKeyword);
}

/** Method declarations already reported: an inherited method is reported once, under the first exported class that has it. */
const reportedMethods = new Set<ts.Node>();

function classSites(path: string, cls: ts.ClassDeclaration, file: string, out: OptionsSite[], own = true, seenMembers = new Set<string>()): void {
  for (const m of cls.members) {
    if (!isPublicMember(m)) continue;
    if (ts.isConstructorDeclaration(m)) {
      if (own) signatureSites(path, m.parameters, file, out);
    } else if (ts.isMethodDeclaration(m) && m.name && !ts.isComputedPropertyName(m.name)) {
      const name = `${isStatic(m) ? "" : "prototype."}${m.name.getText()}`;
      if (seenMembers.has(name) || reportedMethods.has(m)) continue; // overridden below, or reported
      seenMembers.add(name);
      reportedMethods.add(m);
      signatureSites(`${path}.${name}`, m.parameters, file, out);
    }
  }
  // inherited public methods, under this class's name (a base that is not exported is reached only so)
  const ext = cls.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0];
  if (ext && ts.isIdentifier(ext.expression)) {
    for (const d of lookup(file, ext.expression.text, false)) {
      if (d.kind === "node" && ts.isClassDeclaration(d.node)) classSites(path, d.node, d.file, out, false, seenMembers);
    }
  }
}

function declSites(path: string, d: Decl, out: OptionsSite[], depth: number): void {
  if (d.kind === "module") {
    if (depth > 4) return;
    for (const name of new Set(exportNames(d.file))) for (const x of lookup(d.file, name, true)) declSites(`${path}.${name}`, x, out, depth + 1);
    return;
  }
  const { node, file } = d;
  if (ts.isFunctionDeclaration(node)) signatureSites(path, node.parameters, file, out);
  else if (ts.isClassDeclaration(node)) classSites(path, node, file, out);
  else if (ts.isVariableDeclaration(node)) {
    let init = node.initializer;
    while (init && (ts.isAsExpression(init) || ts.isParenthesizedExpression(init))) init = init.expression;
    if (init && (ts.isArrowFunction(init) || ts.isFunctionExpression(init))) signatureSites(path, init.parameters, file, out);
    else if (node.type && ts.isTypeReferenceNode(node.type) && ts.isIdentifier(node.type.typeName)) {
      // `export const autograph: Autograph = ...`: the call signatures of its interface
      for (const t of lookup(file, node.type.typeName.text, false)) {
        if (t.kind === "node" && ts.isInterfaceDeclaration(t.node)) for (const m of t.node.members) if (ts.isCallSignatureDeclaration(m)) signatureSites(path, m.parameters, t.file, out);
      }
    }
  }
}

/** Every options argument of the public API (src/api/index.ts and its namespaces). */
export function optionsSites(root = resolve(import.meta.dirname, "../../src/api/index.ts")): OptionsSite[] {
  const out: OptionsSite[] = [];
  reportedMethods.clear();
  for (const name of new Set(exportNames(root))) {
    const decls = lookup(root, name, true);
    for (const d of decls) declSites(name, d, out, 0);
  }
  return out;
}
