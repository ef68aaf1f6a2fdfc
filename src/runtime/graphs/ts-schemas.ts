/**
 * JSON Schemas of a graph from its TypeScript source, for graphs whose state has no run-time schema
 * (declared with `Annotation<T>`): what `langgraph dev` answers for them. Heavy (a TypeScript program
 * over the graph file and the LangGraph/LangChain typings it imports, a few seconds), so it runs in a
 * worker thread on first request (`schemas.ts`), never at start-up.
 *
 * How: a copy of the graph file, with type aliases appended, is compiled in place of the original (same
 * folder, so its imports resolve as the original's do, to the project's own packages). The aliases
 * reflect the compiled graph's types — state (`~RunInput`: the update type of every channel; before
 * LangGraph.js 0.4 the update type its nodes return, read from `attachNode`), input
 * (`~InputType`), output (`~OutputType`), config (the builder's config annotation) — with chat-message
 * types collapsed to `BaseMessage`, and `typescript-json-schema` renders them (the generator the
 * reference server's parser is derived from, so the dialect is the same: draft-07, `definitions`,
 * JSDoc descriptions, no `required`). Subgraphs (`.addNode("name", compiledGraph)`) get the same, keyed
 * by their namespace (`child`, `child|grandchild`).
 */
import path from "node:path";
import ts from "typescript";
import * as TJS from "typescript-json-schema";

export type SchemaParts = { state?: unknown; input?: unknown; output?: unknown; config?: unknown };
/** Namespace (`""` for the graph itself, `child`, `child|grandchild`) → that graph's schemas. */
export type StaticSchemas = Record<string, SchemaParts>;

const P = "__hangar_schema_";

/** The type-level reflection appended to the graph file (every name prefixed, so none clashes). */
const HELPERS = `
import type { BaseMessage as ${P}BaseMessage } from "@langchain/core/messages";
type ${P}Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type ${P}IsAny<T> = 0 extends 1 & T ? true : false;
type ${P}NoAny<T> = ${P}IsAny<T> extends true ? never : T;
type ${P}Msg<T> = T extends ${P}BaseMessage ? ${P}BaseMessage : never;
type ${P}Msgs<T> = T extends readonly (infer E)[]
  ? ${P}Same<${P}Msg<E>, ${P}BaseMessage> extends true ? ${P}BaseMessage[] : never
  : never;
type ${P}Shape<T, Depth extends 0[] = []> = Depth extends [0, 0, 0]
  ? any
  : T extends unknown
    ? {
        [K in keyof T]: ${P}IsAny<T[K]> extends true
          ? T[K]
          : ${P}Same<${P}Msgs<T[K]>, ${P}BaseMessage[]> extends true
            ? ${P}BaseMessage[]
            : ${P}Same<${P}Msg<T[K]>, ${P}BaseMessage> extends true
              ? ${P}BaseMessage
              : ${P}Shape<T[K], [0, ...Depth]>;
      }
    : never;
type ${P}Compiled<X> = (X extends (...args: any[]) => infer R ? Awaited<R> : Awaited<X>) extends infer G
  ? G extends { compile(...args: any[]): infer C } ? C : G
  : never;
type ${P}LegacyUpdate<G> = G extends {
  attachNode(key: any, node: { runnable: { invoke(input: any, ...rest: any[]): Promise<infer U> } }): void;
}
  ? U
  : never;
type ${P}State<G> = G extends { "~RunInput": infer U }
  ? U
  : [${P}LegacyUpdate<G>] extends [never]
    ? G extends { "~InputType": infer I } ? I : never
    : ${P}LegacyUpdate<G>;
type ${P}Input<G> = G extends { "~InputType": infer I } ? I : never;
type ${P}Output<G> = G extends { "~OutputType": infer O } ? O : never;
type ${P}Config<G> = G extends { builder: { _configSchema?: infer C } }
  ? Exclude<C, undefined> extends infer D extends import("@langchain/langgraph").StateDefinition
    ? import("@langchain/langgraph").UpdateType<D>
    : never
  : never;
`;

const aliases = (i: number, target: string) => `
export type ${P}${i} = ${P}Compiled<${target}>;
export type ${P}${i}_state = ${P}Shape<${P}State<${P}${i}>>;
export type ${P}${i}_input = ${P}Shape<${P}NoAny<${P}Input<${P}${i}>>>;
export type ${P}${i}_output = ${P}Shape<${P}NoAny<${P}Output<${P}${i}>>>;
export type ${P}${i}_config = ${P}Shape<${P}NoAny<${P}Config<${P}${i}>>>;
`;

type Candidate = { namespace: string; names: string[] };

/** The file's top-level variables and imported names (what `typeof name` can name at its end). */
function topLevelNames(source: ts.SourceFile) {
  const variables = new Map<string, ts.VariableDeclaration>();
  const imported = new Set<string>();
  const calls = new Map<string, ts.Expression[]>(); // `workflow.addNode(…)` statements, by receiver
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) {
      for (const decl of statement.declarationList.declarations) {
        if (ts.isIdentifier(decl.name)) variables.set(decl.name.text, decl);
      }
    } else if (ts.isImportDeclaration(statement) && statement.importClause) {
      const clause = statement.importClause;
      if (clause.name) imported.add(clause.name.text);
      const bindings = clause.namedBindings;
      if (bindings && ts.isNamedImports(bindings))
        for (const el of bindings.elements) imported.add(el.name.text);
    } else if (ts.isExpressionStatement(statement)) {
      let receiver: ts.Expression = statement.expression;
      while (ts.isCallExpression(receiver) || ts.isPropertyAccessExpression(receiver))
        receiver = receiver.expression;
      if (ts.isIdentifier(receiver)) {
        const list = calls.get(receiver.text) ?? [];
        list.push(statement.expression);
        calls.set(receiver.text, list);
      }
    }
  }
  return { variables, imported, calls };
}

/**
 * Subgraph candidates by syntax: `.addNode("name", x)` in the graph's definition, where `x` (or a name
 * used inside the function or call passed) is a top-level variable or import. Which of them are graphs
 * the type checker tells later.
 */
function findCandidates(source: ts.SourceFile, exportName: string): Candidate[] {
  const { variables, imported, calls } = topLevelNames(source);
  const known = (name: string) => variables.has(name) || imported.has(name);
  const out: Candidate[] = [];
  const visit = (name: string, namespace: string[], seen: Set<string>) => {
    if (seen.has(name)) return;
    seen.add(name);
    const roots: ts.Node[] = [...(calls.get(name) ?? [])];
    const init = variables.get(name)?.initializer;
    if (init) roots.push(init);
    const referenced: string[] = [];
    let found = false;
    const walk = (node: ts.Node) => {
      if (
        ts.isCallExpression(node) &&
        ts.isPropertyAccessExpression(node.expression) &&
        node.expression.name.text === "addNode" &&
        node.arguments.length >= 2 &&
        ts.isStringLiteralLike(node.arguments[0]!)
      ) {
        found = true;
        const nodeName = (node.arguments[0] as ts.StringLiteralLike).text;
        const arg = node.arguments[1]!;
        const names: string[] = [];
        const collect = (n: ts.Node) => {
          if (ts.isIdentifier(n) && known(n.text) && !names.includes(n.text)) names.push(n.text);
          ts.forEachChild(n, collect);
        };
        if (ts.isIdentifier(arg)) collect(arg);
        else if (ts.isFunctionLike(arg) || ts.isCallLikeExpression(arg)) ts.forEachChild(arg, collect);
        if (names.length > 0) {
          const ns = [...namespace, nodeName];
          out.push({ namespace: ns.join("|"), names });
          for (const sub of names) visit(sub, ns, new Set(seen));
        }
      } else if (ts.isIdentifier(node) && variables.has(node.text) && node.text !== name) {
        referenced.push(node.text);
      }
      ts.forEachChild(node, walk);
    };
    for (const root of roots) walk(root);
    // `export const graph = workflow.compile()`: the nodes were added to `workflow`.
    if (!found) for (const other of referenced) visit(other, namespace, seen);
  };
  visit(exportName, [], new Set());
  return out;
}

function compilerOptions(dir: string): ts.CompilerOptions {
  let options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    esModuleInterop: true,
  };
  const tsconfig = ts.findConfigFile(dir, ts.sys.fileExists, "tsconfig.json");
  if (tsconfig) {
    const read = ts.readConfigFile(tsconfig, ts.sys.readFile);
    if (!read.error)
      options = ts.parseJsonConfigFileContent(read.config, ts.sys, path.dirname(tsconfig)).options;
  }
  // No output, no diagnostics wanted: only the types.
  return { ...options, noEmit: true, strict: true, skipLibCheck: true, allowJs: true };
}

/** `a.ts` → the name the copy is compiled under, and how the copy imports itself. */
function copyNames(file: string) {
  const ext = path.extname(file);
  const tsExt = { ".js": ".ts", ".mjs": ".mts", ".cjs": ".cts", ".jsx": ".tsx" }[ext] ?? ext;
  const base = path.basename(file, ext);
  const copy = path.join(path.dirname(file), `${base}.${P}${tsExt}`);
  const jsExt = { ".ts": ".js", ".tsx": ".js", ".mts": ".mjs", ".cts": ".cjs" }[tsExt] ?? ".js";
  return { copy, self: `./${base}.${P}${jsExt}` };
}

const REF = "#/definitions/";
const SYMBOL_KEY = /^__@.+@\d+$/;

/**
 * Definition names as the reference server writes them: `import("…/@langchain/core/…").Name` keys become
 * `Name` (where that name is free), and `$ref`s name them verbatim (the generator URI-encodes them).
 * Members keyed by a symbol, which no JSON value can have, are left out.
 */
function plainDefinitionNames(schema: any): any {
  const definitions = schema?.definitions;
  if (!definitions) return schema;
  const renamed = new Map<string, string>();
  for (const key of Object.keys(definitions)) {
    const plain = key.replace(/import\([^)]*\)\./g, "");
    if (plain !== key && !(plain in definitions)) {
      definitions[plain] = definitions[key];
      delete definitions[key];
      renamed.set(key, plain);
    }
  }
  return JSON.parse(JSON.stringify(schema), (key, value) => {
    if (SYMBOL_KEY.test(key)) return undefined; // a symbol-keyed member (`[Symbol.toStringTag]`): not JSON
    if (key !== "$ref" || typeof value !== "string" || !value.startsWith(REF)) return value;
    const name = decodeURIComponent(value.slice(REF.length));
    return REF + (renamed.get(name) ?? name);
  });
}

/** One graph file to read: the graphs it exports (as langgraph.json names them). */
export type SourceFile = { file: string; exportNames: readonly string[] };

/** What one file's reading gave: its graphs' schemas, by export name, or why there are none. */
export type FileOutcome = { ok: true; schemas: Record<string, StaticSchemas> } | { ok: false; error: string };

/** A graph file made ready for the program: its copy, with one alias set per graph and subgraph candidate. */
type Prepared = {
  file: string;
  copy: string;
  augmented: string;
  graphs: { exportName: string; root: number; candidates: Candidate[] }[];
  nameIndex: Map<string, number>;
};

/**
 * The copy of `file` with its aliases, numbered from `first` (the numbers are unique in the program, so
 * the names `typescript-json-schema` looks symbols up by are too).
 */
function prepare({ file, exportNames }: SourceFile, first: number): { prepared: Prepared; next: number } {
  const text = ts.sys.readFile(file);
  if (text === undefined) throw new Error(`cannot read ${file}`);
  const original = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const { copy, self } = copyNames(file);
  // One alias set per graph: each export, then each subgraph candidate (a top-level name).
  const targets: string[] = [];
  const nameIndex = new Map<string, number>();
  const graphs = exportNames.map((exportName) => {
    const root = first + targets.length;
    targets.push(`typeof import(${JSON.stringify(self)})[${JSON.stringify(exportName)}]`);
    const candidates = findCandidates(original, exportName);
    for (const { names } of candidates) {
      for (const name of names) {
        if (nameIndex.has(name)) continue;
        nameIndex.set(name, first + targets.length);
        targets.push(`typeof ${name}`);
      }
    }
    return { exportName, root, candidates };
  });
  const augmented = `${text}\n;${HELPERS}${targets.map((t, i) => aliases(first + i, t)).join("")}`;
  return { prepared: { file, copy, augmented, graphs, nameIndex }, next: first + targets.length };
}

/** One TypeScript program over the copies of `files` (the originals' folders and compiler options). */
function buildProgram(files: readonly Prepared[], options: ts.CompilerOptions): ts.Program {
  const copies = new Map(files.map((f) => [f.copy, f.augmented]));
  const host = ts.createCompilerHost(options, true);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (name) => copies.has(name) || fileExists.call(host, name);
  host.readFile = (name) => copies.get(name) ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) => {
    const augmented = copies.get(name);
    return augmented !== undefined
      ? ts.createSourceFile(name, augmented, language, true)
      : getSourceFile.call(host, name, language, ...rest);
  };
  return ts.createProgram({ rootNames: [...copies.keys()], options, host });
}

/** The generator over `program` (which holds every file's copy). */
function generatorOf(program: ts.Program): TJS.JsonSchemaGenerator {
  const generator = TJS.buildGenerator(program, { ignoreErrors: true });
  if (!generator) throw new Error("typescript-json-schema could not read the program");
  return generator;
}

/**
 * The types of a prepared file's aliases. Asked before the generator is built, and which of them are
 * compiled graphs only as the schemas are rendered: the checker numbers types in the order it meets them,
 * and unions list their members in that order, so the steps keep the order the schemas were always read in.
 */
function aliasTypesOf({ copy }: Prepared, program: ts.Program): Map<string, ts.Type> {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(copy);
  if (!source) throw new Error(`the program has no ${copy}`);
  const aliasTypes = new Map<string, ts.Type>();
  for (const statement of source.statements) {
    if (ts.isTypeAliasDeclaration(statement) && statement.name.text.startsWith(P)) {
      aliasTypes.set(statement.name.text, checker.getTypeAtLocation(statement.name));
    }
  }
  return aliasTypes;
}

/** The schemas of one prepared file's graphs and subgraphs. */
function schemasOf(
  { graphs, nameIndex }: Prepared,
  aliasTypes: Map<string, ts.Type>,
  generator: TJS.JsonSchemaGenerator,
): Record<string, StaticSchemas> {
  // Which candidates are compiled graphs: the checker knows.
  const isGraph = (i: number) => {
    const type = aliasTypes.get(`${P}${i}`);
    return (
      type != null && (type.getProperty("lg_is_pregel") != null || type.getProperty("~InputType") != null)
    );
  };
  const schemaOf = (name: string) => {
    try {
      return plainDefinitionNames(generator.getSchemaForSymbol(name));
    } catch {
      return undefined;
    }
  };
  const partsOf = (i: number): SchemaParts => ({
    state: schemaOf(`${P}${i}_state`),
    input: schemaOf(`${P}${i}_input`),
    output: schemaOf(`${P}${i}_output`),
    config: schemaOf(`${P}${i}_config`),
  });

  const result: Record<string, StaticSchemas> = {};
  for (const { exportName, root, candidates } of graphs) {
    const schemas: StaticSchemas = { "": partsOf(root) };
    for (const { namespace, names } of candidates) {
      if (namespace in schemas) continue;
      const graphName = names.find((n) => isGraph(nameIndex.get(n)!));
      if (graphName) schemas[namespace] = partsOf(nameIndex.get(graphName)!);
    }
    result[exportName] = schemas;
  }
  return result;
}

const message = (err: unknown) => (err as Error)?.message ?? String(err);

/**
 * Schemas of the graphs exported as `exportNames` from `file`, and of their subgraphs (one program for
 * all: most of the cost is reading the typings they share).
 */
export function extractStaticSchemas(
  file: string,
  exportNames: readonly string[],
): Record<string, StaticSchemas> {
  const { prepared } = prepare({ file, exportNames }, 0);
  const program = buildProgram([prepared], compilerOptions(path.dirname(file)));
  const aliasTypes = aliasTypesOf(prepared, program);
  return schemasOf(prepared, aliasTypes, generatorOf(program));
}

/**
 * Schemas of several graph files, told file by file to `onResult` as each is had: the files that share
 * compiler options (the same tsconfig.json, or none) are read in ONE program, as most of the cost is the
 * lib and the LangGraph/LangChain typings they all import. A file that cannot be read fails alone; if the
 * shared program cannot be built, each of its files is read in a program of its own.
 */
export function extractAllStaticSchemas(
  files: readonly SourceFile[],
  onResult: (file: string, outcome: FileOutcome) => void,
): void {
  // Groups by tsconfig.json; a copy name once per group (`a.js` and `a.ts` would both be `a.…ts`).
  const groups: { tsconfig: string; files: SourceFile[]; copies: Set<string> }[] = [];
  for (const source of files) {
    const tsconfig = ts.findConfigFile(path.dirname(source.file), ts.sys.fileExists, "tsconfig.json") ?? "";
    const { copy } = copyNames(source.file);
    let group = groups.find((g) => g.tsconfig === tsconfig && !g.copies.has(copy));
    if (!group) {
      group = { tsconfig, files: [], copies: new Set() };
      groups.push(group);
    }
    group.files.push(source);
    group.copies.add(copy);
  }
  for (const group of groups) {
    const prepared: Prepared[] = [];
    let next = 0;
    for (const source of group.files) {
      try {
        const made = prepare(source, next);
        prepared.push(made.prepared);
        next = made.next;
      } catch (err) {
        onResult(source.file, { ok: false, error: message(err) });
      }
    }
    if (prepared.length === 0) continue;
    // The shared program: each file's alias types, then the generator, then each file's schemas.
    const read: { prepared: Prepared; aliasTypes: Map<string, ts.Type> }[] = [];
    let generator: TJS.JsonSchemaGenerator | undefined;
    try {
      const program = buildProgram(prepared, compilerOptions(path.dirname(prepared[0]!.file)));
      for (const p of prepared) read.push({ prepared: p, aliasTypes: aliasTypesOf(p, program) });
      generator = generatorOf(program);
    } catch {
      generator = undefined; // each file alone, below: the one that breaks the program fails by itself
    }
    for (const p of prepared) {
      try {
        const aliasTypes = read.find((r) => r.prepared === p)?.aliasTypes;
        const schemas =
          generator && aliasTypes
            ? schemasOf(p, aliasTypes, generator)
            : extractStaticSchemas(
                p.file,
                p.graphs.map((g) => g.exportName),
              );
        onResult(p.file, { ok: true, schemas });
      } catch (err) {
        onResult(p.file, { ok: false, error: message(err) });
      }
    }
  }
}
