// Module resolution hooks for scripts/api-docs.mjs (registered with module.register, in that
// process only). TypeDoc 0.28 imports "typescript" for its JavaScript compiler API, which the
// project's typescript 7 (the native compiler) does not have: here that import resolves to
// @typescript/typescript6, TypeScript's own compatibility package, which still has it.
export async function resolve(specifier, context, next) {
  if (specifier === 'typescript') return next('@typescript/typescript6', context);
  return next(specifier, context);
}
