// /errors and /errors/<code>: one public page per problem type of the catalogue, at the very
// URL a problem's `type` names (when BALCAO_ERRORS_URL is not set elsewhere).
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { errors } from '../errors/app-error.ts';
import { ERROR_CATALOGUE, ERROR_CODES, type ErrorCode, messagePt } from '../errors/catalogue.ts';
import { sampleProblem } from '../openapi/problem-responses.ts';
import { escapeHtml, inlineCode, page } from './html.ts';

const HTML = 'text/html; charset=utf-8';
const htmlResponse = (description: string) => ({ description, content: { 'text/html': { schema: { type: 'string' } } } });

const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(ERROR_CATALOGUE, code);

function errorPage(config: Config, code: ErrorCode): string {
  const entry = ERROR_CATALOGUE[code];
  return page(
    `${code} · Balcão API errors`,
    `<nav><a href="../errors">All error types</a><a href="../docs">API reference</a></nav>
<p class="status">HTTP ${entry.status}</p>
<h1><code>${escapeHtml(code)}</code> — ${escapeHtml(entry.title)}</h1>
<dl>
<dt>Type</dt><dd><code>${escapeHtml(`${config.errorsUrl}/${code}`)}</code></dd>
<dt>Status</dt><dd>${entry.status}</dd>
<dt>Title</dt><dd>${escapeHtml(entry.title)}</dd>
</dl>
<h2>What it means</h2>
<p>${inlineCode(entry.description)}</p>
<h2>What to do</h2>
<p>${inlineCode(entry.remedy)}</p>${messagePt(code) ? `\n<h2>Mensagem (pt-BR)</h2>\n<p lang="pt-BR">${escapeHtml(messagePt(code) as string)}</p>` : ''}
<h2>Example</h2>
<pre>Content-Type: application/problem+json

${escapeHtml(JSON.stringify(sampleProblem(code, config.errorsUrl), null, 2))}</pre>
<p>Decide by <code>type</code>; <code>title</code> and <code>detail</code> are text that may change. Quote <code>request_id</code> when contacting support.</p>`,
  );
}

function indexPage(): string {
  const rows = ERROR_CODES.map((code) => {
    const e = ERROR_CATALOGUE[code];
    return `<tr><td class="status">${e.status}</td><td><a href="errors/${encodeURIComponent(code)}"><code>${escapeHtml(code)}</code></a></td><td>${inlineCode(e.description)}</td></tr>`;
  });
  return page(
    'Error types · Balcão API',
    `<nav><a href="docs">API reference</a></nav>
<h1>Error types</h1>
<p>Every failure is an <code>application/problem+json</code> body whose <code>type</code> is one of these pages.</p>
<table>
<thead><tr><th>Status</th><th>Type</th><th>Meaning</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`,
  );
}

export function registerErrorPages(app: FastifyInstance, config: Config): void {
  const index = indexPage();
  const pages = new Map(ERROR_CODES.map((code) => [code, errorPage(config, code)]));

  app.get(
    '/errors',
    {
      config: { operationId: 'errors.list', public: true },
      schema: {
        operationId: 'errors.list',
        summary: 'Index of the error types (HTML)',
        tags: ['Documentation'],
        response: { 200: htmlResponse('HTML page.') },
      },
    },
    async (_request, reply) => reply.type(HTML).send(index),
  );

  app.get(
    '/errors/:code',
    {
      config: { operationId: 'errors.get', public: true },
      schema: {
        operationId: 'errors.get',
        summary: 'One error type (HTML)',
        description: 'The page a problem `type` URL points to: what the error means and what to do.',
        tags: ['Documentation'],
        params: {
          type: 'object',
          properties: { code: { type: 'string', enum: [...ERROR_CODES], description: 'Error code.' } },
          required: ['code'],
        },
        response: { 200: htmlResponse('HTML page.') },
      },
    },
    async (request, reply) => {
      const { code } = request.params as { code: string };
      if (!isErrorCode(code)) throw errors.notFound('No such error type.');
      return reply.type(HTML).send(pages.get(code));
    },
  );
}
