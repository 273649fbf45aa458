// The human-facing documentation routes: the rendered reference and the error-type pages.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { registerErrorPages } from './error-pages.ts';
import { registerReferencePage } from './reference-page.ts';

export function registerDocs(app: FastifyInstance, config: Config): void {
  registerReferencePage(app);
  registerErrorPages(app, config);
}
