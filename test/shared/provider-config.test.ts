/**
 * `api` per endpoint (issue 36 §3): which key goes to which wire. `ANTHROPIC_API_KEY` reaches the
 * Anthropic wire and only it; the OpenAI key never goes to Anthropic's host; every key is one
 * redaction knows.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/main/setup/config-load.js';
import { configForAgent } from '../../src/shared/agents.js';
import { modelBaseUrl } from '../../src/shared/config.js';
import { configuredSecrets } from '../../src/shared/tools/secrets.js';
import { tempWorkspace, useCleanup } from '../helpers/index.js';

const cleanup = useCleanup();
const OPENAI_KEY = 'sk-openai-test-7d1e9a3c55';
const ANTHROPIC_KEY = 'sk-ant-test-2b8f4c6e91';
const env = { OPENAI_API_KEY: OPENAI_KEY, ANTHROPIC_API_KEY: ANTHROPIC_KEY };

describe('api and its key', () => {
  it('api "anthropic" takes ANTHROPIC_API_KEY, never OPENAI_API_KEY, and defaults to Anthropic\'s endpoint', () => {
    const cwd = tempWorkspace({}, cleanup);
    const config = loadConfig({ cwd, fromEnv: env, config: { api: 'anthropic' } });
    expect(config.api).toBe('anthropic');
    expect(config.apiKey).toBe(ANTHROPIC_KEY);
    expect(modelBaseUrl(config)).toBe('https://api.anthropic.com/v1');
    expect(configuredSecrets(config)).toContain(ANTHROPIC_KEY);
    // Only the OpenAI key in the environment: none is sent to Anthropic (the simulator or a refusal, not a leak).
    const withoutAnthropic = loadConfig({ cwd, fromEnv: { OPENAI_API_KEY: OPENAI_KEY }, config: { api: 'anthropic', baseUrl: 'http://127.0.0.1:9/v1' } });
    expect(withoutAnthropic.apiKey).toBeUndefined();
  });

  it('a key set in the config (or a flag) for the Anthropic wire stays; the default wire is chat with OPENAI_API_KEY', () => {
    const cwd = tempWorkspace({}, cleanup);
    expect(loadConfig({ cwd, fromEnv: env, config: { api: 'anthropic', apiKey: 'sk-own-key-123456' } }).apiKey).toBe('sk-own-key-123456');
    const chat = loadConfig({ cwd, fromEnv: env });
    expect(chat.api).toBe('chat');
    expect(chat.apiKey).toBe(OPENAI_KEY);
    expect(loadConfig({ cwd, fromEnv: env, flags: { api: 'responses' } }).api).toBe('responses');
  });

  it("an agent on the Anthropic wire gets ANTHROPIC_API_KEY, not the parent's OpenAI key; redaction knows it", () => {
    const cwd = tempWorkspace({}, cleanup);
    const config = loadConfig({
      cwd,
      fromEnv: env,
      config: { agents: { claude: { description: 'answers', api: 'anthropic', model: 'claude-sonnet-4-5' }, gpt: { description: 'answers' } } },
    });
    const claude = configForAgent(config, 'claude');
    expect(claude.api).toBe('anthropic');
    expect(claude.apiKey).toBe(ANTHROPIC_KEY);
    expect(modelBaseUrl(claude)).toBe('https://api.anthropic.com/v1');
    expect(configForAgent(config, 'gpt').apiKey).toBe(OPENAI_KEY);
    expect(configuredSecrets(config)).toEqual(expect.arrayContaining([OPENAI_KEY, ANTHROPIC_KEY]));
  });

  it("an agent on another wire than the parent's does not inherit the parent's key", () => {
    const cwd = tempWorkspace({}, cleanup);
    const config = loadConfig({ cwd, config: { apiKey: OPENAI_KEY, agents: { claude: { description: 'answers', api: 'anthropic' } } } });
    expect(configForAgent(config, 'claude').apiKey).toBeUndefined();
  });

  it('a bad api names the field, what it expects and what it got', () => {
    const cwd = tempWorkspace({}, cleanup);
    expect(() => loadConfig({ cwd, flags: { api: 'gemini' } })).toThrow(
      'config field "api" (from flag --api): expected one of "chat", "responses", "anthropic", received "gemini"',
    );
  });
});
