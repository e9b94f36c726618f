/**
 * The symbols of a JavaScript/TypeScript source: what `code_outline` prints. Parsing is
 * @babel/parser's (pure JavaScript, synchronous, TypeScript and JSX in one parser); this module
 * only walks the tree it returns. It is loaded on the first outline call, not with the tools:
 * a thread whose jobs never outline never compiles the parser.
 */
import { createRequire } from 'node:module';
import type { ParserOptions, ParserPlugin } from '@babel/parser';

/** The extensions code_outline parses, and how. */
export const OUTLINE_LANGUAGES: Readonly<Record<string, { language: string; plugins: ParserPlugin[]; sourceType: 'module' | 'script' | 'unambiguous' }>> = {
  '.ts': { language: 'TypeScript', plugins: ['typescript', 'decorators-legacy'], sourceType: 'module' },
  '.mts': { language: 'TypeScript', plugins: ['typescript', 'decorators-legacy'], sourceType: 'module' },
  // .cts compiles to CommonJS but is written with import/export (and `import x = require()`).
  '.cts': { language: 'TypeScript', plugins: ['typescript', 'decorators-legacy'], sourceType: 'module' },
  '.tsx': { language: 'TypeScript (TSX)', plugins: ['typescript', 'jsx', 'decorators-legacy'], sourceType: 'module' },
  // Plain .js often holds JSX (React projects): accepting it costs nothing on files without it.
  '.js': { language: 'JavaScript', plugins: ['jsx'], sourceType: 'unambiguous' },
  '.jsx': { language: 'JavaScript (JSX)', plugins: ['jsx'], sourceType: 'unambiguous' },
  '.mjs': { language: 'JavaScript', plugins: ['jsx'], sourceType: 'module' },
  '.cjs': { language: 'JavaScript', plugins: ['jsx'], sourceType: 'script' },
};

export interface OutlineSymbol {
  /** `function`, `class`, `method`, `getter`, `setter`, `constructor`, `interface`, `type`, `enum`, `namespace`, `const`, `let`, `var`, `export`. */
  kind: string;
  name: string;
  /** Parameters as written, whitespace collapsed (functions and methods only). */
  params?: string;
  /** 1-based, inclusive: the whole declaration, its `export` keyword included. */
  startLine: number;
  endLine: number;
  exported: boolean;
  static?: boolean;
  /** 0 at the top of the file; 1 for a class member or a namespace member, and so on. */
  depth: number;
}

/** A parse failure: the parser's message and where. */
export class OutlineSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number | undefined,
    readonly column: number | undefined,
  ) {
    super(message);
    this.name = 'OutlineSyntaxError';
  }
}

/** The smallest view of a Babel node this walk needs (Babel's own types live in @babel/types). */
interface Node {
  type: string;
  start?: number | null;
  end?: number | null;
  loc?: { start: { line: number }; end: { line: number } } | null;
  [key: string]: unknown;
}

type Parse = (input: string, options: ParserOptions) => { program: { body: Node[] } };
let parse: Parse | undefined;

/** @babel/parser, required on first use (CommonJS; synchronous, so no await in the tool). */
function parser(): Parse {
  parse ??= (createRequire(import.meta.url)('@babel/parser') as { parse: Parse }).parse;
  return parse;
}

/**
 * Parses `source` as the language of `extension` (a key of {@link OUTLINE_LANGUAGES}) and
 * returns its symbols in source order. Throws {@link OutlineSyntaxError} when it does not parse.
 */
export function outlineSource(source: string, extension: string, options: { declarationFile?: boolean } = {}): OutlineSymbol[] {
  const lang = OUTLINE_LANGUAGES[extension];
  if (!lang) throw new Error(`no parser for ${extension}`);
  const plugins: ParserPlugin[] = options.declarationFile
    ? lang.plugins.map((p) => (p === 'typescript' ? (['typescript', { dts: true }] as unknown as ParserPlugin) : p))
    : lang.plugins;
  let program: { body: Node[] };
  try {
    program = parser()(source, {
      sourceType: lang.sourceType,
      plugins,
      errorRecovery: false,
      allowReturnOutsideFunction: lang.sourceType !== 'module',
      allowAwaitOutsideFunction: true,
      allowImportExportEverywhere: false,
    }).program;
  } catch (error) {
    const loc = (error as { loc?: { line?: number; column?: number } }).loc;
    const message = error instanceof Error ? error.message : String(error);
    throw new OutlineSyntaxError(message, loc?.line, loc?.column === undefined ? undefined : loc.column + 1);
  }
  const out: OutlineSymbol[] = [];
  new Walker(source, out).statements(program.body, 0);
  return out;
}

class Walker {
  constructor(
    private readonly source: string,
    private readonly out: OutlineSymbol[],
  ) {}

  statements(body: readonly Node[], depth: number): void {
    for (const statement of body) this.statement(statement, statement, depth, false);
  }

  /** `outer` spans the lines reported (the export statement around a declaration). */
  private statement(node: Node, outer: Node, depth: number, exported: boolean): void {
    switch (node.type) {
      case 'ExportNamedDeclaration': {
        const declaration = node.declaration as Node | null | undefined;
        if (declaration) this.statement(declaration, node, depth, true);
        else this.reExport(node, depth);
        return;
      }
      case 'ExportDefaultDeclaration': {
        const declaration = node.declaration as Node;
        if (isDeclaration(declaration) && nameOf(declaration.id as Node | null) !== undefined) this.statement(declaration, node, depth, true);
        else this.add({ kind: kindOfValue(declaration) ?? 'export', name: 'default', ...this.paramsOf(declaration) }, node, depth, true);
        return;
      }
      case 'ExportAllDeclaration': {
        const exported = nameOf(node.exported as Node | null);
        this.add({ kind: 'export', name: `* ${exported ? `as ${exported} ` : ''}from ${this.text(node.source as Node)}` }, node, depth, true);
        return;
      }
      case 'TSExportAssignment':
        this.add({ kind: 'export', name: `= ${this.text(node.expression as Node)}` }, node, depth, true);
        return;
      case 'FunctionDeclaration':
      case 'TSDeclareFunction':
        this.add({ kind: 'function', name: nameOf(node.id as Node | null) ?? '(anonymous)', ...this.paramsOf(node) }, outer, depth, exported);
        return;
      case 'ClassDeclaration':
        this.add({ kind: 'class', name: nameOf(node.id as Node | null) ?? '(anonymous)' }, outer, depth, exported);
        this.classMembers(node.body as Node, depth + 1);
        return;
      case 'TSInterfaceDeclaration':
        this.add({ kind: 'interface', name: nameOf(node.id as Node) ?? '?' }, outer, depth, exported);
        return;
      case 'TSTypeAliasDeclaration':
        this.add({ kind: 'type', name: nameOf(node.id as Node) ?? '?' }, outer, depth, exported);
        return;
      case 'TSEnumDeclaration':
        this.add({ kind: 'enum', name: nameOf(node.id as Node) ?? '?' }, outer, depth, exported);
        return;
      case 'TSModuleDeclaration': {
        this.add({ kind: 'namespace', name: this.moduleName(node) }, outer, depth, exported);
        let body = node.body as Node | undefined;
        // `namespace a.b { … }` nests a declaration per segment; the statements are in the last.
        while (body?.type === 'TSModuleDeclaration') body = body.body as Node | undefined;
        if (body?.type === 'TSModuleBlock') this.statements(body.body as Node[], depth + 1);
        return;
      }
      case 'VariableDeclaration':
        for (const declarator of node.declarations as Node[]) this.variable(declarator, node, outer, depth, exported);
        return;
      case 'ExpressionStatement':
        this.commonJsExport(node.expression as Node, node, depth);
        return;
      default:
        return;
    }
  }

  /** Top-level `const f = () => …` is a function, `const C = class …` a class; other variables only when exported. */
  private variable(declarator: Node, declaration: Node, outer: Node, depth: number, exported: boolean): void {
    const name = nameOf(declarator.id as Node);
    if (name === undefined) return;
    const init = declarator.init as Node | null | undefined;
    const kind = init ? kindOfValue(init) : undefined;
    // One declarator of several: its own lines; the only one: the whole statement's.
    const span = (declaration.declarations as Node[]).length === 1 ? outer : declarator;
    if (kind === 'class' && init) {
      this.add({ kind, name }, span, depth, exported);
      this.classMembers(init.body as Node, depth + 1);
    } else if (kind && init) this.add({ kind, name, ...this.paramsOf(init) }, span, depth, exported);
    else if (exported) this.add({ kind: declaration.kind as string, name }, span, depth, exported);
  }

  private classMembers(body: Node, depth: number): void {
    for (const member of (body?.body as Node[] | undefined) ?? []) {
      const name = this.keyName(member);
      const isStatic = member.static === true;
      switch (member.type) {
        case 'ClassMethod':
        case 'ClassPrivateMethod': {
          const kind = member.kind === 'constructor' ? 'constructor' : member.kind === 'get' ? 'getter' : member.kind === 'set' ? 'setter' : 'method';
          this.add({ kind, name, ...this.paramsOf(member), ...(isStatic ? { static: true } : {}) }, member, depth, false);
          break;
        }
        case 'ClassProperty':
        case 'ClassPrivateProperty':
        case 'ClassAccessorProperty': {
          // A field holding a function is a method to a reader; plain fields are left out.
          const value = member.value as Node | null | undefined;
          if (value && kindOfValue(value) === 'function')
            this.add({ kind: 'method', name, ...this.paramsOf(value), ...(isStatic ? { static: true } : {}) }, member, depth, false);
          break;
        }
        default:
          break;
      }
    }
  }

  /** `export { a, b as c } from './x'` and `export { a }`: one entry, the list as written. */
  private reExport(node: Node, depth: number): void {
    const specifiers = (node.specifiers as Node[] | undefined) ?? [];
    if (specifiers.length === 0) return;
    const names = specifiers.map((s) => nameOf(s.exported as Node) ?? '?').join(', ');
    const from = node.source ? ` from ${this.text(node.source as Node)}` : '';
    this.add({ kind: 'export', name: `{ ${names} }${from}` }, node, depth, true);
  }

  /** `module.exports.f = function …`, `exports.f = () => …`, `module.exports = class …`. */
  private commonJsExport(expression: Node, statement: Node, depth: number): void {
    if (expression?.type !== 'AssignmentExpression') return;
    const target = this.text(expression.left as Node);
    const match = /^(?:module\.)?exports(?:\.([A-Za-z_$][\w$]*))?$/.exec(target);
    if (!match || (match[1] === undefined && !target.startsWith('module.'))) return;
    const value = expression.right as Node;
    const kind = kindOfValue(value);
    if (!kind) return;
    this.add({ kind, name: match[1] ?? nameOf(value.id as Node | null) ?? 'module.exports', ...this.paramsOf(value) }, statement, depth, true);
    if (kind === 'class') this.classMembers(value.body as Node, depth + 1);
  }

  private add(symbol: Omit<OutlineSymbol, 'startLine' | 'endLine' | 'depth' | 'exported'>, span: Node, depth: number, exported: boolean): void {
    this.out.push({ ...symbol, startLine: span.loc?.start.line ?? 0, endLine: span.loc?.end.line ?? 0, exported, depth });
  }

  private paramsOf(node: Node): { params?: string } {
    const params = node.params as Node[] | undefined;
    if (!Array.isArray(params)) return {};
    const text = params.map((p) => this.text(p)).join(', ');
    return { params: text.length > 120 ? `${text.slice(0, 119)}…` : text };
  }

  private keyName(member: Node): string {
    const key = member.key as Node | undefined;
    if (!key) return '?';
    if (key.type === 'PrivateName') return `#${nameOf(key.id as Node) ?? '?'}`;
    if (member.computed === true) return `[${this.text(key)}]`;
    return nameOf(key) ?? this.text(key);
  }

  private moduleName(node: Node): string {
    const parts: string[] = [];
    for (let current: Node | undefined = node; current?.type === 'TSModuleDeclaration'; current = current.body as Node | undefined) {
      parts.push(nameOf(current.id as Node) ?? this.text(current.id as Node));
    }
    return parts.join('.');
  }

  /** The node's source text, whitespace collapsed. */
  private text(node: Node | null | undefined): string {
    if (!node || typeof node.start !== 'number' || typeof node.end !== 'number') return '?';
    return this.source.slice(node.start, node.end).replace(/\s+/g, ' ');
  }
}

function nameOf(node: Node | null | undefined): string | undefined {
  if (!node) return undefined;
  if (node.type === 'Identifier') return node.name as string;
  if (node.type === 'StringLiteral') return JSON.stringify(node.value);
  if (node.type === 'NumericLiteral') return String(node.value);
  return undefined;
}

function isDeclaration(node: Node): boolean {
  return node.type === 'FunctionDeclaration' || node.type === 'ClassDeclaration' || node.type === 'TSDeclareFunction' || node.type === 'TSInterfaceDeclaration';
}

/** `function` for function-valued expressions, `class` for class expressions, else undefined. */
function kindOfValue(node: Node): 'function' | 'class' | undefined {
  switch (node.type) {
    case 'ArrowFunctionExpression':
    case 'FunctionExpression':
    case 'FunctionDeclaration':
      return 'function';
    case 'ClassExpression':
    case 'ClassDeclaration':
      return 'class';
    case 'TSAsExpression':
    case 'TSSatisfiesExpression':
    case 'ParenthesizedExpression':
      return kindOfValue(node.expression as Node);
    default:
      return undefined;
  }
}
