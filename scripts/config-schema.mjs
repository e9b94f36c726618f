#!/usr/bin/env node
// forkpool.config.schema.json at the package root, made from the config's zod schema
// (src/main/setup/config-json-schema.ts, built into dist/ first: npm run build).
//
//   npm run docs:schema   build, then write it; test/main/setup/config-json-schema.test.ts fails
//                         when the committed file is not what the code makes
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const file = path.join(root, 'forkpool.config.schema.json');
const { configJsonSchema } = await import(path.join(root, 'dist', 'main', 'setup', 'config-json-schema.js'));
const text = `${JSON.stringify(configJsonSchema(), null, 2)}\n`;

writeFileSync(file, text);
process.stdout.write(`config-schema: wrote ${path.relative(root, file)} (${text.length} bytes)\n`);
