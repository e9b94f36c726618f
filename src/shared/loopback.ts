/** Loopback port helpers for starting local servers (redis-server in the BullMQ bench and tests). */
import { connect, createServer } from 'node:net';

/** A TCP port free on 127.0.0.1 right now (the OS picks it; a server started next may still race for it). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** True when something accepts TCP connections on 127.0.0.1:`port`. */
export function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
