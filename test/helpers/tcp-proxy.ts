// A TCP relay in front of a server, to make it vanish (stop), come back (resume) or hang (freeze) in tests.
import net from 'node:net';

/** The ErrorResponse a backend sends when pg_terminate_backend ends it. */
const TERMINATED_BY_ADMINISTRATOR = (() => {
  const fields = Buffer.from('SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0');
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeUInt32BE(fields.length + 4, 1);
  return Buffer.concat([header, fields]);
})();

export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly held: Array<() => void> = [];
  private frozen = false;
  private refusing = false;
  private connectionsToTerminate = 0;
  port = 0;
  /** Connections cut at once while refusing: how many times a client has tried and failed. */
  refused = 0;
  /** Connections ended at their first query (terminateAtFirstQuery). */
  terminated = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetHost, targetPort);
    await proxy.listen(0);
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Refuses new connections and cuts the open ones, as a dead server would. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Like stop, except that each connection attempt is accepted, counted in `refused`, and cut at once. */
  async refuse(): Promise<void> {
    await this.stop();
    this.refusing = true;
    await this.listen(this.port);
  }

  /** Accepts connections again on the same port. */
  async resume(): Promise<void> {
    if (this.refusing) await this.stop();
    this.refusing = false;
    await this.listen(this.port);
  }

  /** Ends each of the next `count` connections when its client sends its first query (a PostgreSQL Parse or
   *  Query message) as `pg_terminate_backend` would: a FATAL 57P01 answer, then the cut. */
  terminateAtFirstQuery(count: number): void {
    this.connectionsToTerminate = count;
  }

  /** Keeps connections open but forwards nothing, as a hung server would. */
  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const deliver of this.held.splice(0)) deliver();
  }

  private forward(from: net.Socket, to: net.Socket): void {
    from.on('data', (chunk) => {
      const deliver = () => {
        if (!to.destroyed) to.write(chunk);
      };
      if (this.frozen) this.held.push(deliver);
      else deliver();
    });
  }

  private listen(port: number): Promise<void> {
    const server = net.createServer((client) => {
      if (this.refusing) {
        this.refused += 1;
        client.destroy();
        return;
      }
      const upstream = net.connect(this.targetPort, this.targetHost);
      this.sockets.add(client);
      this.sockets.add(upstream);
      if (this.connectionsToTerminate > 0) {
        this.connectionsToTerminate -= 1;
        const cutAtFirstQuery = (chunk: Buffer) => {
          if (chunk[0] !== 0x50 && chunk[0] !== 0x51) return; // 'P' (Parse) or 'Q' (Query)
          this.terminated += 1;
          upstream.destroy();
          client.end(TERMINATED_BY_ADMINISTRATOR);
        };
        client.prependListener('data', cutAtFirstQuery);
      }
      this.forward(client, upstream);
      this.forward(upstream, client);
      const close = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('close', close).on('error', close);
      upstream.on('close', close).on('error', close);
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        this.port = (server.address() as net.AddressInfo).port;
        resolve();
      });
    });
  }
}
