// The one place where a refused list-query parameter becomes its DECISIONS B.9 `detail` token.
import { type AppError, errors } from '../errors/app-error.ts';

export const refuse = {
  limit: (): AppError => errors.queryInvalid('invalid_limit'),
  cursor: (): AppError => errors.queryInvalid('invalid_cursor'),
  count: (): AppError => errors.queryInvalid('invalid_count'),
  prefix: (): AppError => errors.queryInvalid('invalid_prefix'),
  sort: (field: string): AppError => errors.queryInvalid(`sort_field_not_allowed:${field}`),
  fields: (field: string): AppError => errors.queryInvalid(`fields_not_allowed:${field}`),
  filterField: (field: string): AppError => errors.queryInvalid(`filter_field_not_allowed:${field}`),
  filterOperator: (field: string, op: string): AppError => errors.queryInvalid(`filter_operator_not_allowed:${field}:${op}`),
  filterValue: (field: string): AppError => errors.queryInvalid(`filter_value_invalid:${field}`),
};
