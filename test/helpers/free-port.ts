import net from 'node:net';

/**
 * Ports handed out here lie below Linux's ephemeral range (32768–60999): a port the kernel picked for `listen(0)`
 * would be free only until the next `listen(0)` or outgoing connection of any test running beside this one, and a
 * server started seconds later (the topology's third instance) then found it taken. Below that range only another
 * caller of this function can take it, and it picks at random among 12 000.
 */
const FIRST = 20_000;
const COUNT = 12_000;

/** A port free on loopback now: the test or benchmark server that takes it listens on 127.0.0.1 only. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = FIRST + Math.floor(Math.random() * COUNT);
    if (await bindable(port)) return port;
  }
  return listenOn(0);
}

const bindable = (port: number): Promise<boolean> =>
  listenOn(port).then(
    () => true,
    () => false,
  );

function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: taken } = server.address() as net.AddressInfo;
      server.close(() => resolve(taken));
    });
  });
}
