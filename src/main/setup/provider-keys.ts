/**
 * Which environment key goes to which wire: `OPENAI_API_KEY` is read into `apiKey` like any
 * layer, but an endpoint that speaks Anthropic Messages takes `ANTHROPIC_API_KEY` instead, and
 * never the OpenAI key (it would be sent to another provider's host). Runs on the raw layers,
 * before the schema: a worker thread's `process.env` is a scrubbed copy, so the key must be in
 * the config the job carries.
 */

const OPENAI_ENV_SOURCE = 'environment variable OPENAI_API_KEY';
const ANTHROPIC_ENV = 'ANTHROPIC_API_KEY';
const ANTHROPIC_ENV_SOURCE = `environment variable ${ANTHROPIC_ENV}`;

/**
 * With `api: "anthropic"` at the top level: a key from a file, code or flag stays; one that came
 * from OPENAI_API_KEY is replaced by ANTHROPIC_API_KEY (or dropped). An agent on the Anthropic
 * wire with no key of its own, on another endpoint than the parent's, gets ANTHROPIC_API_KEY.
 */
export function applyProviderKeys(raw: Record<string, unknown>, sources: Record<string, string>, env: NodeJS.ProcessEnv | undefined): void {
  const anthropicKey = env?.[ANTHROPIC_ENV] || undefined;
  if (raw.api === 'anthropic' && (raw.apiKey === undefined || sources.apiKey === OPENAI_ENV_SOURCE)) {
    delete raw.apiKey;
    delete sources.apiKey;
    if (anthropicKey) {
      raw.apiKey = anthropicKey;
      sources.apiKey = ANTHROPIC_ENV_SOURCE;
    }
  }
  const agents = raw.agents;
  if (!anthropicKey || !agents || typeof agents !== 'object' || Array.isArray(agents)) return;
  const withKeys: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [name, agent] of Object.entries(agents as Record<string, unknown>)) {
    withKeys[name] = agent;
    if (!agent || typeof agent !== 'object' || Array.isArray(agent)) continue;
    const entry = agent as Record<string, unknown>;
    if (entry.api !== 'anthropic' || entry.apiKey !== undefined) continue;
    // Same wire and endpoint as the parent: it inherits the parent's key (see configForAgent).
    if (raw.api === 'anthropic' && (entry.baseUrl === undefined || entry.baseUrl === raw.baseUrl)) continue;
    withKeys[name] = { ...entry, apiKey: anthropicKey };
    sources[`agents.${name}.apiKey`] = ANTHROPIC_ENV_SOURCE;
  }
  raw.agents = withKeys;
}
