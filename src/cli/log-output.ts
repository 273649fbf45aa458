// Where `serve` and `demo` write their logs: human-readable lines (pino-pretty) when stdout is a
// terminal, JSON lines otherwise (for collectors), and JSON on stderr with --json, whose stdout
// carries one object only.
import type { FastifyServerOptions } from 'fastify';

export type LoggerOptions = Exclude<FastifyServerOptions['logger'], undefined | boolean>;

export async function logOutput(level: string, json: boolean, terminal = process.stdout.isTTY === true): Promise<LoggerOptions> {
  if (json) return { level, stream: process.stderr };
  if (!terminal) return { level };
  // Loaded only for a terminal: a served process that logs JSON never pays for it.
  const { default: pretty } = await import('pino-pretty');
  return { level, stream: pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname', sync: true }) };
}
