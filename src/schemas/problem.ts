// The problem+json body of every error (SPEC part 7).
import { Type } from '@sinclair/typebox';

export const FieldErrorSchema = Type.Object(
  {
    field: Type.String({ description: 'Path of the refused field in the body, e.g. `items[3].quantity`.' }),
    code: Type.String({ description: 'Stable snake_case identifier, e.g. `required`, `invalid_email`.' }),
    message: Type.String({ description: 'Message in Portuguese (pt-BR).' }),
  },
  { additionalProperties: false },
);

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ format: 'uri', description: 'URL `{errors_url}/<code>`; clients decide by it.' }),
    title: Type.String(),
    status: Type.Integer({ format: 'int32', minimum: 400, maximum: 599 }),
    detail: Type.Optional(Type.String()),
    instance: Type.Optional(Type.String()),
    request_id: Type.String(),
    errors: Type.Optional(Type.Array(FieldErrorSchema)),
  },
  { additionalProperties: false, $id: 'Problem' },
);
