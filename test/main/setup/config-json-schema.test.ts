/**
 * forkpool.config.schema.json: the committed file is what the config's zod schema makes (run
 * `npm run docs:schema` after changing the config), a real JSON Schema validator (Ajv, draft
 * 2020-12) accepts valid files and names the field of a bad one, and a config file may say
 * `$schema` and hold comments.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { configJsonSchema } from '../../../src/main/setup/config-json-schema.js';
import { CONFIG_FILE_NAME, loadConfig } from '../../../src/main/setup/config-load.js';
import { configError, REPO_ROOT, tempWorkspace, useCleanup } from '../../helpers/index.js';

const cleanup = useCleanup();
const committed = JSON.parse(readFileSync(path.join(REPO_ROOT, 'forkpool.config.schema.json'), 'utf8')) as Record<string, unknown>;

function validator() {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats.default(ajv);
  return ajv.compile(committed);
}

describe('forkpool.config.schema.json', () => {
  it('is what the config schema generates (else: npm run docs:schema, and commit it)', () => {
    expect(committed).toEqual(JSON.parse(JSON.stringify(configJsonSchema())));
  });

  it('accepts a full config, the aliases and $schema; names the field of a bad value or an unknown key', () => {
    const validate = validator();
    const good = {
      $schema: './forkpool.config.schema.json',
      baseUrl: 'http://127.0.0.1:8787/v1',
      model: 'gpt-4.1-mini',
      background: { maxConcurrent: 8, isolation: 'shared', timeoutMinutes: 5 },
      grantedTools: ['read_file', 'grep'],
      sessionBudget: { maxCostUsd: 5 },
      max_background_agents: 4,
    };
    expect(validate(good), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ background: { isolation: 'process' } })).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ instancePath: '/background/isolation', keyword: 'enum' });
    expect(validate({ backgrund: {} })).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ keyword: 'additionalProperties', params: { additionalProperty: 'backgrund' } });
  });
});

describe('a config file with $schema and comments', () => {
  it('loads: comments are ignored (also inside the text of a value they are not), $schema is not a setting', () => {
    const dir = tempWorkspace({}, cleanup);
    writeFileSync(
      path.join(dir, CONFIG_FILE_NAME),
      '{\n  "$schema": "./forkpool.config.schema.json", // for editors\n  /* the model */ "baseUrl": "http://127.0.0.1:9/v1",\n  "model": "a//b/*c*/"\n}\n',
    );
    const config = loadConfig({ file: true, cwd: dir });
    expect(config.baseUrl).toBe('http://127.0.0.1:9/v1');
    expect(config.model).toBe('a//b/*c*/');
    expect(config).not.toHaveProperty('$schema');
  });

  it('a $schema that is not a string names the field', () => {
    const dir = tempWorkspace({ [CONFIG_FILE_NAME]: JSON.stringify({ $schema: 42 }) }, cleanup);
    expect(configError(() => loadConfig({ file: true, cwd: dir })).issues[0]).toMatchObject({ field: '$schema', received: '42' });
  });
});
