// GET /changelog: CHANGELOG.md as text/markdown, public. The `Link: <…/changelog>; rel="deprecation"`
// header of a deprecated route's answers points here (http/deprecation.ts). Read once, at the first
// request; the file sits at the package root both beside src/docs/ and, once built, dist/cli/.
import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { errors } from '../errors/app-error.ts';
import { CHANGELOG_PATH } from '../http/deprecation.ts';

const FILE = new URL('../../CHANGELOG.md', import.meta.url);

export function registerChangelogPage(app: FastifyInstance): void {
  let text: Promise<string> | undefined;
  app.get(
    CHANGELOG_PATH,
    {
      config: { operationId: 'docs.changelog', public: true },
      schema: {
        operationId: 'docs.changelog',
        summary: 'Changelog of the API (Markdown)',
        description: 'Every version, its breaking changes and deprecations, and the sunset date of each deprecated route or field.',
        tags: ['Documentation'],
        response: { 200: { description: 'Markdown.', content: { 'text/markdown': { schema: { type: 'string' } } } } },
      },
    },
    async (_request, reply) => {
      text ??= readFile(FILE, 'utf8');
      const body = await text.catch(() => {
        text = undefined;
        throw errors.notFound('No changelog is installed with this server.');
      });
      return reply.type('text/markdown; charset=utf-8').send(body);
    },
  );
}
