// Splits streamed RFC 4180 text into records, each with the line it starts on and which cells
// were written `""` (an empty string, where an empty cell is null). csv-parse took half the CPU of
// a CSV import (it works byte by byte on Buffers, and its `raw` text, needed for line numbers,
// costs more); here a line without a quote is one native `split`, and only quoted lines are read
// character by character. Strict as csv-parse's defaults: a quote inside an unquoted cell, text
// after a closing quote or a quote left open is refused, with its line.

export interface CsvRecord {
  cells: string[];
  /** The line the record starts on (1-based). */
  line: number;
  /** Indexes of cells written `""`. */
  quotedEmpty?: Set<number>;
}

export class CsvSyntaxError extends Error {}

interface Parsed {
  cells: string[];
  /** Where the next record starts. */
  end: number;
  /** Line breaks inside quoted cells. */
  breaks: number;
  quotedEmpty?: Set<number>;
}

export async function* csvRecords(text: AsyncIterable<string>): AsyncGenerator<CsvRecord> {
  let buffer = '';
  let line = 1;
  for await (const chunk of text) {
    buffer = buffer === '' ? chunk : buffer + chunk;
    let position = 0;
    // The next quote, found once per chunk rather than once per line (a file without quotes has none).
    let quote = buffer.indexOf('"');
    for (;;) {
      const newline = buffer.indexOf('\n', position);
      if (newline === -1) break;
      if (quote !== -1 && quote < position) quote = buffer.indexOf('"', position);
      if (quote === -1 || quote > newline) {
        const end = buffer.charCodeAt(newline - 1) === 13 && newline > position ? newline - 1 : newline;
        yield { cells: buffer.slice(position, end).split(','), line };
        line++;
        position = newline + 1;
        continue;
      }
      const parsed = parseQuoted(buffer, position, false, line);
      if (!parsed) break; // a quoted cell goes on in the next chunk
      yield { cells: parsed.cells, line, quotedEmpty: parsed.quotedEmpty };
      line += 1 + parsed.breaks;
      position = parsed.end;
    }
    buffer = buffer.slice(position);
  }
  if (buffer !== '') {
    const parsed = parseQuoted(buffer, 0, true, line) as Parsed;
    yield { cells: parsed.cells, line, quotedEmpty: parsed.quotedEmpty };
  }
}

/** One record from `start`, quotes and all; undefined when it may go on past the end of `text` (and `final` is false). */
function parseQuoted(text: string, start: number, final: boolean, line: number): Parsed | undefined {
  const cells: string[] = [];
  let quotedEmpty: Set<number> | undefined;
  let breaks = 0;
  let p = start;
  for (;;) {
    if (text.charCodeAt(p) === 34) {
      let value = '';
      p++;
      for (;;) {
        const q = text.indexOf('"', p);
        if (q === -1) {
          if (final) throw new CsvSyntaxError(`line ${line}: a quoted cell is not closed`);
          return undefined;
        }
        value += text.slice(p, q);
        if (q + 1 === text.length && !final) return undefined;
        if (text.charCodeAt(q + 1) === 34) {
          value += '"';
          p = q + 2;
          continue;
        }
        p = q + 1;
        break;
      }
      for (let i = value.indexOf('\n'); i !== -1; i = value.indexOf('\n', i + 1)) breaks++;
      if (value === '') {
        quotedEmpty ??= new Set();
        quotedEmpty.add(cells.length);
      }
      cells.push(value);
      const next = text.charCodeAt(p);
      if (next === 44) {
        p++;
        continue;
      }
      if (next === 10) return { cells, end: p + 1, breaks, quotedEmpty };
      if (next === 13 && p + 1 === text.length && !final) return undefined;
      if (next === 13 && text.charCodeAt(p + 1) === 10) return { cells, end: p + 2, breaks, quotedEmpty };
      if (p === text.length) return { cells, end: p, breaks, quotedEmpty };
      throw new CsvSyntaxError(`line ${line + breaks}: text after the closing quote of a cell`);
    }
    const comma = text.indexOf(',', p);
    let newline = text.indexOf('\n', p);
    if (newline === -1) {
      if (!final) return undefined;
      newline = text.length;
    }
    const stop = comma !== -1 && comma < newline ? comma : newline;
    let value = text.slice(p, stop);
    if (stop === newline && value.endsWith('\r')) value = value.slice(0, -1);
    if (value.includes('"')) throw new CsvSyntaxError(`line ${line + breaks}: a quote inside a cell that does not start with one`);
    cells.push(value);
    if (stop === comma) {
      p = comma + 1;
      continue;
    }
    return { cells, end: Math.min(newline + 1, text.length), breaks, quotedEmpty };
  }
}
