// postgres.js opens its sockets with Nagle's algorithm on: a COPY's last message (CopyDone, a few
// bytes) then waits for the server's delayed ACK, about 40 ms a COPY (the demo's 38 small COPYs
// took 3.6 s instead of 0.4 s on PostgreSQL). Sockets made here send each write at once.
import net from 'node:net';

interface SocketTarget {
  host: readonly string[];
  port: readonly number[];
  path?: string | false;
}

let attempt = 0;

/** postgres.js's `socket` option: a socket still connecting (writes queue until it is up). Several hosts are tried in turn. */
export function noDelaySocket(target: SocketTarget): net.Socket {
  if (target.path) return net.connect({ path: target.path });
  const i = attempt++ % target.host.length;
  return net.connect({ host: target.host[i], port: target.port[i] ?? target.port[0] ?? 5432, noDelay: true });
}
