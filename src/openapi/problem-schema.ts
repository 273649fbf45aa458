// The problem+json body (SPEC part 7) as a schema, for the document and the contract tests.
// The error handler writes this shape; the type assertions below keep the two in step.
import { type Static, Type } from '@sinclair/typebox';
import type { FieldError } from '../errors/app-error.ts';

export const FieldErrorSchema = Type.Object(
  {
    field: Type.String({ description: 'Path of the refused field in the body.', examples: ['items[3].quantity'] }),
    code: Type.String({ description: 'Stable snake_case identifier of the refusal.', examples: ['too_small'] }),
    message: Type.String({ description: 'Human-readable message, in Portuguese (pt-BR).', examples: ['Deve ser maior que 0.'] }),
  },
  { title: 'FieldError', additionalProperties: false },
);

export const ProblemSchema = Type.Object(
  {
    type: Type.String({
      format: 'uri',
      description:
        'Identifies the error type: `<errors_url>/<code>`, where `<errors_url>` depends on the deployment and `<code>` is one of ' +
        '`x-error-codes`; clients decide by the code (the last path segment).',
    }),
    title: Type.String({ description: 'Short English label of the type; may change.' }),
    status: Type.Integer({ format: 'int32', minimum: 400, maximum: 599, description: 'Same as the HTTP status.' }),
    detail: Type.Optional(Type.String({ description: 'The concrete case; for a refused query parameter, a token naming it.' })),
    instance: Type.Optional(Type.String({ description: 'Path of the request.' })),
    request_id: Type.String({ description: 'Same as the `X-Request-Id` header.' }),
    errors: Type.Optional(Type.Array(FieldErrorSchema, { description: 'Only on a 422 about the body: one item per refused field.' })),
    existing_id: Type.Optional(
      Type.String({
        format: 'uuid',
        description: 'Only on a 409 `external_id_conflict`: the id of the record that already has the external id.',
        examples: ['9b2e4f61-3c7a-4d15-8e0b-6a1f2c3d4e5f'],
      }),
    ),
  },
  { title: 'Problem', additionalProperties: false },
);

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const fieldErrorInStep: Same<Static<typeof FieldErrorSchema>, FieldError> = true;
void fieldErrorInStep;
