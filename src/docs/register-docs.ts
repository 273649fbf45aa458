// The human-facing documentation routes: the rendered reference, the error-type pages and the changelog.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { registerChangelogPage } from './changelog-page.ts';
import { registerErrorPages } from './error-pages.ts';
import { registerReferencePage } from './reference-page.ts';

export function registerDocs(app: FastifyInstance, config: Config): void {
  registerReferencePage(app);
  registerErrorPages(app, config);
  registerChangelogPage(app);
}
