/** Moved to test/helpers/faults.ts (one helper stack); kept so existing imports still compile. */
export * from '../helpers/faults.js';
export { RESEARCH_TASK } from '../helpers/pool.js';
