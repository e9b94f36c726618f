/** A network between two processes that a test or the fault campaign can cut: a loopback TCP proxy. */
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Drops every connection through it and refuses new ones, as a network cut would. */
  cut(): void;
  /** Lets connections through again. */
  restore(): void;
  close(): Promise<void>;
}

/** A loopback TCP proxy to `targetPort` whose connections can be cut (and refused) and restored. */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let isCut = false;
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    track(client);
    if (isCut) return client.destroy();
    const upstream = net.connect(targetPort, '127.0.0.1');
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cut = () => {
    isCut = true;
    for (const socket of sockets) socket.destroy();
  };
  return {
    port: (server.address() as net.AddressInfo).port,
    cut,
    restore: () => (isCut = false),
    close: () => (cut(), new Promise<void>((resolve) => server.close(() => resolve()))),
  };
}
