// Where `serve` and `demo` write their logs: human-readable lines (pino-pretty) when stdout is a
// terminal, JSON lines otherwise (for collectors), and JSON on stderr with --json, whose stdout
// carries one object only.
//
// JSON lines are written asynchronously (sonic-boom, `sync: false`): under load the lines that
// arrive while one write is in flight go out together in the next, instead of one blocking write
// per request (the profile showed the synchronous writes at 5% of a list request's CPU). There is
// no minimum batch, so a quiet server's lines still appear at once; pino flushes what is pending
// when the process exits. A kill -9 can lose the lines of the last few milliseconds.
import type { FastifyServerOptions } from 'fastify';
import pino from 'pino';

export type LoggerOptions = Exclude<FastifyServerOptions['logger'], undefined | boolean>;

export async function logOutput(level: string, json: boolean, terminal = process.stdout.isTTY === true): Promise<LoggerOptions> {
  if (json) return { level, stream: pino.destination({ dest: 2, sync: false }) };
  if (!terminal) return { level, stream: pino.destination({ dest: 1, sync: false }) };
  // Loaded only for a terminal: a served process that logs JSON never pays for it.
  const { default: pretty } = await import('pino-pretty');
  return { level, stream: pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname', sync: true }) };
}
