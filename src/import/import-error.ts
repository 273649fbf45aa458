// Errors of `balcao import`: every refusal names where it happened (`customers[12].email`),
// so an operator can fix the file; nothing is written when one is thrown.

export interface ImportIssue {
  /** `resource[index].field`, `resource[index]` or `resource`; empty for the file or the account as a whole. */
  path: string;
  message: string;
}

export class ImportError extends Error {
  readonly issues: readonly ImportIssue[];

  constructor(issues: readonly ImportIssue[], totalIssues = issues.length) {
    const first = issues[0] ?? { path: 'file', message: 'invalid import file' };
    const more = totalIssues - 1;
    super(
      `${first.path ? `${first.path}: ` : ''}${first.message}${more > 0 ? ` (and ${more} more ${more === 1 ? 'error' : 'errors'})` : ''}`,
    );
    this.name = 'ImportError';
    this.issues = issues;
  }

  static at(path: string, message: string): ImportError {
    return new ImportError([{ path, message }]);
  }

  /** A refusal of the whole import (unreadable file, unknown account). */
  static plain(message: string): ImportError {
    return new ImportError([{ path: '', message }]);
  }
}
