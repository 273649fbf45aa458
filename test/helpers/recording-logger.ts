// A logger that keeps what it is given, to assert what a component logs (and how often).
import type { FastifyBaseLogger } from 'fastify';

export interface LogEntry {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

export function recordingLogger(): { logger: FastifyBaseLogger; entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at =
    (level: string) =>
    (first: unknown, second?: unknown): void => {
      if (typeof first === 'string') entries.push({ level, msg: first, fields: {} });
      else entries.push({ level, msg: typeof second === 'string' ? second : '', fields: (first ?? {}) as Record<string, unknown> });
    };
  const logger = {
    level: 'trace',
    fatal: at('fatal'),
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    trace: at('trace'),
    silent: () => {},
    child: () => logger,
  };
  return { logger: logger as unknown as FastifyBaseLogger, entries };
}
