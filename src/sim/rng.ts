/**
 * A small seeded PRNG (mulberry32). Each request gets its own generator derived from the
 * server seed and the request number, so a request's jitter and random fault do not depend
 * on how many other requests were served concurrently before it.
 */
export type Rng = () => number;

export function mulberry32(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The generator for request `n` (1-based) of a server seeded with `seed`. */
export function requestRng(seed: number, n: number): Rng {
  // Mix the two numbers so neighbouring seeds and request numbers give unrelated streams.
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(n + 0x632be5ab, 0xc2b2ae35);
  h ^= h >>> 16;
  return mulberry32(h);
}
