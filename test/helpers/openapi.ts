/**
 * `/openapi.json` as a contract in tests: {@link ApiContract.check} finds the operation a real
 * response answered (its path template and method), fails when the document does not list its
 * status or content type, validates its body against the document's schema for that status
 * with a real JSON Schema validator (Ajv, draft 2020-12, the dialect of OpenAPI 3.1), and
 * records what was seen so a test can say which operations and statuses it covered.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

interface MediaDoc {
  schema?: { $ref?: string };
}
interface OperationDoc {
  operationId: string;
  responses: Record<string, { content?: Record<string, MediaDoc> }>;
}
export interface OpenApiDoc {
  paths: Record<string, Record<string, OperationDoc>>;
  components: { schemas: Record<string, unknown> };
}

const DOC_ID = 'openapi.json';

export class ApiContract {
  /** `operationId status` of every response checked. */
  readonly seen = new Set<string>();
  readonly #doc: OpenApiDoc;
  readonly #ajv: Ajv2020;
  readonly #validators = new Map<string, ValidateFunction>();

  constructor(doc: OpenApiDoc) {
    this.#doc = doc;
    this.#ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats.default(this.#ajv);
    // The whole document under one id: its `#/components/schemas/...` references resolve inside it.
    this.#ajv.addSchema(doc, DOC_ID);
  }

  /** Every operation of the document, as `operationId`. */
  operations(): string[] {
    return Object.values(this.#doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
  }

  /**
   * Checks one response of `method url` against the document and returns its body (JSON parsed,
   * an NDJSON stream as its lines, text as text). `stream`: an endless body (SSE): only its
   * status and content type are checked, then it is cancelled.
   */
  async check(method: string, url: string, response: Response, options: { stream?: boolean } = {}): Promise<any> {
    const path = new URL(url, 'http://x').pathname;
    const [template, operation] = this.#operation(method.toLowerCase(), path);
    const where = `${method.toUpperCase()} ${template} (${operation.operationId}) answered ${response.status}`;
    const documented = operation.responses[String(response.status)];
    if (!documented) {
      await response.body?.cancel();
      throw new Error(`${where}, a status the document does not list (it lists ${Object.keys(operation.responses).join(', ')})`);
    }
    const contentType = (response.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? '';
    const media = documented.content?.[contentType];
    if (!media) {
      await response.body?.cancel();
      throw new Error(`${where} with content-type ${JSON.stringify(contentType)}; the document says ${Object.keys(documented.content ?? {}).join(', ')}`);
    }
    this.seen.add(`${operation.operationId} ${response.status}`);
    if (options.stream) {
      await response.body?.cancel();
      return undefined;
    }
    const text = await response.text();
    const validate = this.#validator(media, where);
    if (contentType === 'application/json') return this.#valid(validate, JSON.parse(text), where, text);
    if (contentType === 'application/x-ndjson') {
      return text
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line, i) => this.#valid(validate, JSON.parse(line), `${where}, line ${i + 1}`, line));
    }
    return this.#valid(validate, text, where, text.slice(0, 200));
  }

  #valid(validate: ValidateFunction, body: unknown, where: string, raw: string): unknown {
    if (!validate(body)) {
      const errors = (validate.errors ?? []).slice(0, 8).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
      throw new Error(`${where}: the body breaks the document's schema:\n  ${errors.join('\n  ')}\nbody: ${raw.slice(0, 2_000)}`);
    }
    return body;
  }

  #validator(media: MediaDoc, where: string): ValidateFunction {
    const ref = media.schema?.$ref;
    if (!ref?.startsWith('#/')) throw new Error(`${where}: its schema is not a reference to a component (${JSON.stringify(media.schema)})`);
    let validate = this.#validators.get(ref);
    if (!validate) {
      validate = this.#ajv.getSchema(`${DOC_ID}${ref}`);
      if (!validate) throw new Error(`${where}: ${ref} is not in the document`);
      this.#validators.set(ref, validate);
    }
    return validate;
  }

  /** The template that matches `path` for `method`; a literal segment wins over a parameter (`/v1/jobs/wait`). */
  #operation(method: string, path: string): [string, OperationDoc] {
    const matches = Object.entries(this.#doc.paths).filter(([template, item]) => item[method] && templateMatches(template, path));
    matches.sort(([a], [b]) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
    const found = matches[0];
    if (!found) throw new Error(`${method.toUpperCase()} ${path}: no operation in the document`);
    return [found[0], found[1][method] as OperationDoc];
  }
}

function templateMatches(template: string, path: string): boolean {
  const pattern = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+');
  return new RegExp(`^${pattern}$`).test(path);
}
