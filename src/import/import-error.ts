// Errors of `balcao import` and `balcao export` (one name for both): every refusal names where it
// happened (`customers[12].email`), so an operator can fix the file; nothing is written when an
// import throws one.

export interface TransferIssue {
  /** `resource[index].field`, `resource[index]` or `resource`; empty for the file or the account as a whole. */
  path: string;
  message: string;
}

export class DataTransferError extends Error {
  readonly issues: readonly TransferIssue[];

  constructor(issues: readonly TransferIssue[], totalIssues = issues.length) {
    const first = issues[0] ?? { path: 'file', message: 'invalid import file' };
    const more = totalIssues - 1;
    super(
      `${first.path ? `${first.path}: ` : ''}${first.message}${more > 0 ? ` (and ${more} more ${more === 1 ? 'error' : 'errors'})` : ''}`,
    );
    this.name = 'DataTransferError';
    this.issues = issues;
  }

  static at(path: string, message: string): DataTransferError {
    return new DataTransferError([{ path, message }]);
  }

  /** A refusal of the whole import or export (unreadable file, unknown account). */
  static plain(message: string): DataTransferError {
    return new DataTransferError([{ path: '', message }]);
  }
}

/** The former names, while read-records.ts and sources.ts (edited on another branch) still use them. */
export const ImportError = DataTransferError;
export type ImportError = DataTransferError;
export type ImportIssue = TransferIssue;
