// A one-line progress bar on a terminal (stderr), so stdout stays for --json; silent when the
// stream is not a TTY or the work is small.
export interface Progress {
  update(done: number, total: number): void;
  finish(): void;
}

const WIDTH = 30;
const REDRAW_MS = 100;

export function terminalProgress(label: string, stream: NodeJS.WriteStream = process.stderr, minTotal = 5_000): Progress {
  let lastDraw = 0;
  let drawn = false;
  const draw = (done: number, total: number) => {
    const ratio = total === 0 ? 1 : done / total;
    const filled = Math.round(ratio * WIDTH);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(WIDTH - filled)}`;
    stream.write(`\r\x1b[2K${label} ${bar} ${Math.floor(ratio * 100)}% ${done.toLocaleString('en')}/${total.toLocaleString('en')}`);
    drawn = true;
  };
  return {
    update(done, total) {
      if (!stream.isTTY || total < minTotal) return;
      const now = Date.now();
      if (done < total && now - lastDraw < REDRAW_MS) return;
      lastDraw = now;
      draw(done, total);
    },
    finish() {
      if (drawn) stream.write('\r\x1b[2K');
    },
  };
}
