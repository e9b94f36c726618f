/**
 * `forkpool init`: a commented starter forkpool.config.json that loads as it is and with every
 * commented setting switched on, whose `$schema` points at the schema shipped with the package
 * (and validates against it), and that is never written over without --force.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { stripComments } from 'jsonc-parser';
import { describe, expect, it } from 'vitest';
import { CONFIG_FILE_NAME, loadConfig } from '../../src/main/setup/config-load.js';
import { DEFAULTS } from '../../src/shared/defaults.js';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, REPO_ROOT, runCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';

const cleanup = useCleanup();

describe('forkpool init', () => {
  it('writes a starter config that loads with the defaults, points at the schema and validates against it', async () => {
    const dir = tempWorkspace({}, cleanup);
    const r = await runCli(['init'], { cwd: dir });
    expect(r.code, describeResult(r)).toBe(0);
    const file = path.join(dir, CONFIG_FILE_NAME);
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('// Keep API keys out of this file');
    const config = loadConfig({ file: true, cwd: dir });
    expect(config.background).toMatchObject({
      maxConcurrent: DEFAULTS.background.maxConcurrent,
      timeoutMinutes: DEFAULTS.background.timeoutMinutes,
      isolation: 'thread',
    });
    const parsed = JSON.parse(stripComments(text)) as { $schema: string };
    const schemaFile = path.resolve(dir, parsed.$schema);
    expect(schemaFile).toBe(path.join(REPO_ROOT, 'forkpool.config.schema.json'));
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    const validate = ajv.compile(JSON.parse(readFileSync(schemaFile, 'utf8')));
    expect(validate(parsed), JSON.stringify(validate.errors)).toBe(true);

    // Every commented setting, switched on, still loads and validates.
    const allOn = text.replace(/^ {2}\/\/ ("[a-zA-Z]+": .*,)$/gm, '  $1');
    expect(allOn).toContain('\n  "grantedTools":');
    writeFileSync(file, allOn);
    expect(loadConfig({ file: true, cwd: dir }).grantedTools).toContain('grep');
    expect(validate(JSON.parse(stripComments(allOn))), JSON.stringify(validate.errors)).toBe(true);
  }, 60_000);

  it('refuses to replace an existing file without --force (exit 2), and replaces it with --force', async () => {
    const dir = tempWorkspace({ [CONFIG_FILE_NAME]: '{"model": "mine"}' }, cleanup);
    const refused = await runCli(['init'], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('forkpool init: forkpool.config.json already exists here');
    expect(readFileSync(path.join(dir, CONFIG_FILE_NAME), 'utf8')).toBe('{"model": "mine"}');
    const forced = await runCli(['init', '--force'], { cwd: dir });
    expect(forced.code, describeResult(forced)).toBe(0);
    expect(existsSync(path.join(dir, CONFIG_FILE_NAME))).toBe(true);
    expect(readFileSync(path.join(dir, CONFIG_FILE_NAME), 'utf8')).toContain('"$schema"');
  }, 60_000);
});
