// Where `serve` and `demo` write their logs: human-readable lines (pino-pretty) when stdout is a
// terminal, JSON lines otherwise (for collectors), and JSON on stderr with --json, whose stdout
// carries one object only.
//
// JSON lines are written asynchronously (sonic-boom, `sync: false`), and lines written close together leave in one
// write (TurnBatchedLines): each asynchronous write is a hop through libuv's thread pool, and a write per line, then
// per turn of the event loop, was most of what the access log cost (docs/performance.md). The first line after a
// quiet spell leaves at the end of its turn; under load, at most one write per WRITE_EVERY_MS carries what
// gathered. What is pending is written synchronously when the process exits. A kill -9 can lose the lines of the
// last few milliseconds.
import fs from 'node:fs';
import type { FastifyServerOptions } from 'fastify';
import pino from 'pino';

export type LoggerOptions = Exclude<FastifyServerOptions['logger'], undefined | boolean>;

type Destination = ReturnType<typeof pino.destination>;

/** How often, at most, the lines go to the destination under load. */
export const WRITE_EVERY_MS = 10;

/** A pino stream that hands the lines written close together (one turn; under load, WRITE_EVERY_MS) to `destination`
 *  together. */
export class TurnBatchedLines {
  private pending: string[] = [];
  private scheduled = false;
  private lastWrite = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly destination: Destination,
    private readonly everyMs = WRITE_EVERY_MS,
  ) {
    // pino flushes its own destination at exit; this one it does not know about.
    process.once('exit', () => this.flushSync());
  }

  write(line: string): boolean {
    this.pending.push(line);
    if (!this.scheduled) {
      this.scheduled = true;
      const wait = this.lastWrite + this.everyMs - performance.now();
      // Unreferenced: lines never keep a process alive (it writes them on exit).
      if (wait <= 0) setImmediate(this.flush);
      else setTimeout(this.flush, wait).unref();
    }
    return true;
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    this.lastWrite = performance.now();
    const lines = this.pending;
    if (lines.length === 0) return;
    this.pending = [];
    this.destination.write(lines.length === 1 ? (lines[0] as string) : lines.join(''));
  };

  /**
   * Writes what sonic-boom holds, then the pending lines, before returning. The pending lines are
   * written here with writeSync: handed to sonic-boom, they would start an asynchronous write, which
   * its flushSync does not wait for. A batch of an earlier turn still in flight then (its write
   * already started) may land after them.
   */
  flushSync(): void {
    const lines = this.pending.join('');
    this.pending = [];
    try {
      this.destination.flushSync();
      // sonic-boom's open file descriptor (set once ready; its typings leave it out).
      if (lines) fs.writeSync((this.destination as unknown as { fd: number }).fd, lines);
    } catch {
      // Not open yet, or closed: nothing can be written now.
    }
  }
}

export async function logOutput(level: string, json: boolean, terminal = process.stdout.isTTY === true): Promise<LoggerOptions> {
  if (json || !terminal) return { level, stream: new TurnBatchedLines(pino.destination({ dest: json ? 2 : 1, sync: false })) };
  // Loaded only for a terminal: a served process that logs JSON never pays for it.
  const { default: pretty } = await import('pino-pretty');
  return { level, stream: pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname', sync: true }) };
}
