// PLACEHOLDER until the write API lands: Ajv errors → errors[] of a 422.
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import type { FieldError } from '../errors/app-error.ts';

export function toFieldErrors(validation: FastifySchemaValidationError[]): FieldError[] {
  return validation.map((e) => ({
    field: e.instancePath.replace(/^\//, '').replace(/\/(\d+)/g, '[$1]').replace(/\//g, '.') || 'body',
    code: 'invalid',
    message: 'Valor inválido.',
  }));
}
