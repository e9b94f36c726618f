import { Redis } from 'ioredis';

/**
 * An ioredis client for BullMQ and our channels. BullMQ needs `maxRetriesPerRequest: null`
 * (its blocking commands must wait through a reconnect, not fail); in an ES module BullMQ
 * cannot load ioredis itself, so every part gets an instance of its own, closed by its owner.
 */
export function redisClient(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, lazyConnect: false });
}

/** Closes a client without waiting on a server that may be gone. */
export async function closeClient(client: Redis): Promise<void> {
  try {
    await Promise.race([client.quit(), new Promise((resolve) => setTimeout(resolve, 500).unref())]);
  } catch {
    // Already closed or not connected.
  }
  client.disconnect();
}
