// /docs: the API reference rendered in the browser by Scalar from /v1/openapi.json. The
// Scalar bundle is served from node_modules by this server (no CDN, no font or telemetry calls).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { API_TITLE } from '../openapi/document-info.ts';
import { OPENAPI_PATH } from '../openapi/plugin.ts';
import { escapeHtml } from './html.ts';

const SCALAR_PACKAGE = '@scalar/fastify-api-reference';

/** The standalone bundle shipped inside the package (read once per process, on first use). */
let bundle: { version: string; js: Buffer; gzip: Buffer } | undefined;
function scalarBundle() {
  if (!bundle) {
    const require = createRequire(import.meta.url);
    const entry = require.resolve(SCALAR_PACKAGE);
    const js = readFileSync(path.join(path.dirname(entry), 'js', 'standalone.js'));
    const version = /@scalar\/api-reference (\d+\.\d+\.\d+)/.exec(js.subarray(0, 600).toString('utf8'))?.[1] ?? 'local';
    bundle = { version, js, gzip: gzipSync(js, { level: 6 }) };
  }
  return bundle;
}

/** Relative URLs, so the page also works behind a proxy that mounts the API under a prefix. */
function referencePage(scriptVersion: string): string {
  const configuration = {
    url: `.${OPENAPI_PATH}`,
    pageTitle: API_TITLE,
    theme: 'default',
    layout: 'modern',
    withDefaultFonts: false,
    telemetry: false,
    showDeveloperTools: 'never',
    agent: { disabled: true },
    documentDownloadType: 'json',
    hideClientButton: true,
    operationTitleSource: 'summary',
    defaultOpenAllTags: false,
  };
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(API_TITLE)} reference</title>
</head>
<body>
<div id="app"></div>
<script src="./docs/scalar.js?v=${encodeURIComponent(scriptVersion)}"></script>
<script>Scalar.createApiReference('#app', ${JSON.stringify(configuration).replace(/</g, '\\u003c')});</script>
<noscript>The reference needs JavaScript; the raw description is at <a href=".${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</noscript>
</body>
</html>
`;
}

export function registerReferencePage(app: FastifyInstance): void {
  const hidden = { public: true, hidden: true } as const;

  app.get('/docs', { config: { operationId: 'docs.page', ...hidden } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(referencePage(scalarBundle().version)),
  );
  app.get('/docs/', { config: { operationId: 'docs.page-slash', ...hidden } }, async (_request, reply) => reply.redirect('../docs', 301));
  // Browsers ask for it on every page; no icon, without a 404 in the console.
  app.get('/favicon.ico', { config: { operationId: 'docs.favicon', ...hidden } }, async (_request, reply) => reply.code(204).send());
  app.get('/docs/scalar.js', { config: { operationId: 'docs.script', ...hidden } }, async (request, reply) => {
    const { js, gzip } = scalarBundle();
    reply.type('application/javascript; charset=utf-8').header('cache-control', 'public, max-age=86400').header('vary', 'accept-encoding');
    if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) return reply.header('content-encoding', 'gzip').send(gzip);
    return reply.send(js);
  });
}
