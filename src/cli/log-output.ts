// Where `serve` and `demo` write their logs: human-readable lines (pino-pretty) when stdout is a
// terminal, JSON lines otherwise (for collectors), and JSON on stderr with --json, whose stdout
// carries one object only.
//
// JSON lines are written asynchronously (sonic-boom, `sync: false`), and the lines of one turn of the
// event loop leave in one write (TurnBatchedLines): under load a turn finishes several requests, and
// a write per line was most of what the access log cost (docs/performance.md). There is no minimum
// batch and no timer, so a quiet server's line appears at the end of the turn that wrote it; what is
// pending is written synchronously when the process exits. A kill -9 can lose the lines of the last
// few milliseconds.
import fs from 'node:fs';
import type { FastifyServerOptions } from 'fastify';
import pino from 'pino';

export type LoggerOptions = Exclude<FastifyServerOptions['logger'], undefined | boolean>;

type Destination = ReturnType<typeof pino.destination>;

/** A pino stream that hands the lines written during one event-loop turn to `destination` together. */
export class TurnBatchedLines {
  private pending: string[] = [];
  private scheduled = false;

  constructor(private readonly destination: Destination) {
    // pino flushes its own destination at exit; this one it does not know about.
    process.once('exit', () => this.flushSync());
  }

  write(line: string): boolean {
    this.pending.push(line);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
    return true;
  }

  private readonly flush = (): void => {
    this.scheduled = false;
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
