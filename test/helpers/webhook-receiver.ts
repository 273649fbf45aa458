// A real HTTP server on 127.0.0.1 that receives webhooks: records every request (headers and
// body), answers with whatever `respond` decides (a status, or 'hang' to never answer), and lets
// a test wait until a condition on the received requests holds.
import http from 'node:http';

export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  headers: http.IncomingHttpHeaders;
}

export type Answer = number | 'hang';

export interface Receiver {
  url: string;
  received: Received[];
  /** Requests answered 'hang' whose sender still waits (has not given up and closed the connection). */
  hangingOpen(): number;
  /** Resolves once `check(received)` is true; rejects after `ms`. */
  until(check: (received: Received[]) => boolean, ms?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(respond: (r: Received, index: number) => Answer = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  const waiters = new Set<() => void>();
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        id: String(req.headers['webhook-id']),
        timestamp: String(req.headers['webhook-timestamp']),
        signature: String(req.headers['webhook-signature']),
        body: Buffer.concat(chunks).toString('utf8'),
        headers: req.headers,
      };
      const answer = respond(r, received.length);
      received.push(r);
      for (const w of waiters) w();
      if (answer === 'hang') {
        hanging.add(res);
        res.once('close', () => hanging.delete(res));
        return;
      }
      res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer >= 400 ? 'x'.repeat(5000) : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    hangingOpen: () => hanging.size,
    until(check, ms = 20_000) {
      if (check(received)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(test);
          reject(new Error(`receiver: condition not met in ${ms} ms; got ${received.length} requests`));
        }, ms);
        const test = () => {
          if (!check(received)) return;
          clearTimeout(timer);
          waiters.delete(test);
          resolve();
        };
        waiters.add(test);
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
