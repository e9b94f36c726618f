import { z } from 'zod';

/**
 * A model endpoint: http(s), without `user:pass@`. Credentials in the URL are refused rather
 * than passed on (the client would send them nowhere useful and fail with a vague connection
 * error, and a URL is printed in places a key never is); the key belongs in `apiKey`.
 */
export const modelUrlSchema = z
  .url({ protocol: /^https?$/ })
  .refine(
    (url) => !URL.canParse(url) || (new URL(url).username === '' && new URL(url).password === ''),
    'a URL without credentials (user:pass@ in a URL is not supported; put the key in apiKey)',
  );
