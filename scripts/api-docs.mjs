#!/usr/bin/env node
// The API reference in docs/api/, generated from the TSDoc comments by TypeDoc and
// typedoc-plugin-markdown (see docs/architecture.md, "API reference").
//
//   node scripts/api-docs.mjs            regenerate docs/api/ (npm run docs:api)
//   node scripts/api-docs.mjs --check    regenerate into a temporary folder; exit 1, naming each
//                                        file that differs, if docs/api/ is not what the code
//                                        makes (npm run docs:check, in .ci/run)
//
// The entry points are the package's public entries, read from package.json `exports` (each
// `types` file under dist/ maps back to its source under src/), and each module is named after
// its import path (`forkpool`, `forkpool/executors`, ...). The output carries no source links,
// git revision, date or absolute path: it depends on the code alone.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const committed = path.join(root, 'docs', 'api');
const check = process.argv.includes('--check');

// TypeDoc sorts with localeCompare, whose default locale Node takes from the environment (LANG,
// LC_ALL): run under one locale everywhere, so the output does not depend on whose machine it is.
const LOCALE = 'en_US.UTF-8';
if (process.env.LC_ALL !== LOCALE) {
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, LC_ALL: LOCALE },
  });
  process.exit(child.status ?? 1);
}

/** `{ importPath: sourceFile }` for every entry of package.json `exports` that has types. */
function entryPoints() {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const entries = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const types = typeof target === 'object' && target !== null ? target.types : undefined;
    if (typeof types !== 'string') continue;
    const source = types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts');
    entries[subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`] = path.join(root, source);
  }
  return entries;
}

async function generate(out) {
  // TypeDoc's `import ts from "typescript"` finds the 6.0 JavaScript API: package.json's
  // `typescript` is @typescript/typescript6 (the compiler, TypeScript 7, is @typescript/native).
  const { Application, TSConfigReader, Converter } = await import('typedoc');
  const entries = entryPoints();
  const app = await Application.bootstrapWithPlugins(
    {
      entryPoints: Object.values(entries),
      tsconfig: path.join(root, 'tsconfig.build.json'),
      plugin: ['typedoc-plugin-markdown'],
      out,
      name: 'forkpool API',
      readme: path.join(root, 'scripts', 'api-docs-readme.md'),
      // Deterministic: no source links (they name a commit or a path), no git, no generator line.
      disableSources: true,
      disableGit: true,
      hideGenerator: true,
      cleanOutputDir: true,
      // The code is type-checked by `npm run typecheck` (typescript 7); TypeDoc only reads it.
      skipErrorChecking: true,
      excludePrivate: true,
      excludeInternal: true,
      sort: ['kind', 'alphabetical'],
      validation: { notExported: false, invalidLink: true, notDocumented: false },
      logLevel: 'Warn',
      // typedoc-plugin-markdown
      mergeReadme: true,
      hideBreadcrumbs: true,
      useCodeBlocks: true,
      parametersFormat: 'table',
      interfacePropertiesFormat: 'table',
    },
    [new TSConfigReader()],
  );
  // Modules are named after the import path a user writes, not the source file.
  const names = new Map(Object.entries(entries).map(([name, file]) => [path.relative(root, file).split(path.sep).join('/'), name]));
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.children ?? []) {
      const name = names.get(context.project.getSymbolIdFromReflection(module)?.packagePath ?? '');
      if (name) module.name = name;
    }
  });
  const project = await app.convert();
  if (!project) throw new Error('TypeDoc could not convert the entry points (see the messages above)');
  await app.generateOutputs(project);
  if (app.logger.hasErrors()) throw new Error('TypeDoc reported errors (see above)');
}

/** Every file under `dir`, as paths relative to it, sorted. */
function listFiles(dir, base = dir) {
  let files = [];
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return files;
  }
  for (const name of entries) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) files = files.concat(listFiles(full, base));
    else files.push(path.relative(base, full));
  }
  return files.sort();
}

if (check) {
  const fresh = mkdtempSync(path.join(tmpdir(), 'forkpool-api-'));
  try {
    await generate(fresh);
    const want = listFiles(fresh);
    const have = listFiles(committed);
    const differ = [];
    for (const file of new Set([...want, ...have])) {
      if (!want.includes(file)) differ.push(`${file} (not generated any more: remove it)`);
      else if (!have.includes(file)) differ.push(`${file} (missing)`);
      else if (!readFileSync(path.join(fresh, file)).equals(readFileSync(path.join(committed, file)))) differ.push(`${file} (differs)`);
    }
    if (differ.length > 0) {
      process.stderr.write(`docs:check: docs/api/ is not what the code generates; run npm run docs:api and commit the result. ${differ.length} file(s):\n`);
      for (const line of differ.sort()) process.stderr.write(`  docs/api/${line}\n`);
      process.exitCode = 1;
    } else {
      process.stdout.write(`docs:check: docs/api/ is up to date (${want.length} files)\n`);
    }
  } finally {
    rmSync(fresh, { recursive: true, force: true });
  }
} else {
  await generate(committed);
  process.stdout.write(`docs:api: wrote ${listFiles(committed).length} files to docs/api/\n`);
}
