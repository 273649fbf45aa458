// Known paths and their methods, collected as routes register, so an unknown method on a
// known path answers 405 with `Allow` (Fastify would say 404) and an unknown path 404.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type AppError, errors } from '../errors/app-error.ts';

export function trackRoutes(app: FastifyInstance) {
  const patterns: { regex: RegExp; methods: Set<string> }[] = [];
  const byUrl = new Map<string, Set<string>>();

  app.addHook('onRoute', (route) => {
    if (route.url === '*' || route.url.includes('*')) return;
    let methods = byUrl.get(route.url);
    if (!methods) {
      methods = new Set();
      byUrl.set(route.url, methods);
      const source = route.url
        .split('/')
        .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/');
      patterns.push({ regex: new RegExp(`^${source}/?$`), methods });
    }
    for (const m of [route.method].flat()) methods.add(m);
  });

  /** The 404 or 405 error for a request that matched no route. */
  function routeMiss(request: FastifyRequest): AppError {
    const path = request.url.split('?', 1)[0] as string;
    const allowed = new Set<string>();
    for (const p of patterns) if (p.regex.test(path)) for (const m of p.methods) allowed.add(m);
    if (allowed.size > 0 && !allowed.has(request.method)) return errors.methodNotAllowed([...allowed].sort());
    return errors.notFound(`No route ${request.method} ${path}.`);
  }

  return {
    routeMiss,
    /** Every registered method and path pattern (the fuzz tests walk them all). */
    list: (): { method: string; url: string }[] => [...byUrl].flatMap(([url, methods]) => [...methods].map((method) => ({ method, url }))),
    notFound: async (request: FastifyRequest, _reply: FastifyReply) => {
      throw routeMiss(request);
    },
  };
}
