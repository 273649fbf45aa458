// Reads and parses an import file, turning I/O and JSON failures into one-line messages.
import { readFile } from 'node:fs/promises';
import { ImportError } from './import-error.ts';

export async function readImportFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'it is a directory'
          : code === 'EACCES'
            ? 'permission denied'
            : String(code ?? err);
    throw ImportError.plain(`cannot read ${file}: ${why}`);
  }
  try {
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (err) {
    throw ImportError.plain(`${file} is not valid JSON (${(err as Error).message.split('\n')[0]})`);
  }
}
