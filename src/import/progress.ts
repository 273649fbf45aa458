// A one-line progress display on a terminal (stderr), so stdout stays for --json; silent when
// the stream is not a TTY or the file is small.
import type { ImportProgress } from './import-data.ts';

export interface Progress {
  update(progress: ImportProgress): void;
  finish(): void;
}

const WIDTH = 30;
const REDRAW_MS = 100;

export function terminalProgress(stream: NodeJS.WriteStream = process.stderr, minRecords = 5_000): Progress {
  let lastDraw = 0;
  let drawn = false;
  const line = (text: string) => {
    stream.write(`\r\x1b[2K${text}`);
    drawn = true;
  };
  return {
    update({ phase, done, total }) {
      if (!stream.isTTY || total < minRecords) return;
      if (phase === 'validating') return line(`validating ${total.toLocaleString('en')} records…`);
      const now = Date.now();
      if (done < total && now - lastDraw < REDRAW_MS) return;
      lastDraw = now;
      const ratio = total === 0 ? 1 : done / total;
      const filled = Math.round(ratio * WIDTH);
      line(
        `importing ${'█'.repeat(filled)}${'░'.repeat(WIDTH - filled)} ${Math.floor(ratio * 100)}% ${done.toLocaleString('en')}/${total.toLocaleString('en')} rows`,
      );
    },
    finish() {
      if (drawn) stream.write('\r\x1b[2K');
    },
  };
}
