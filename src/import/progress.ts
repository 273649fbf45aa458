// A progress bar on a terminal (stderr, so stdout stays for --json): rows, rows/s and, when the
// input size is known, the share read and an ETA. Silent when stderr is not a TTY.
import { SingleBar } from 'cli-progress';

export interface ProgressUpdate {
  rows: number;
  /** Bytes done and in all; a total of 0 means unknown (a pipe, or an export). */
  bytes: number;
  totalBytes: number;
}

export interface Progress {
  update(progress: ProgressUpdate): void;
  finish(): void;
}

export function terminalProgress(verb: string, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return { update() {}, finish() {} };
  const started = Date.now();
  let bar: SingleBar | undefined;
  const rate = (rows: number) => Math.round(rows / Math.max(0.001, (Date.now() - started) / 1000)).toLocaleString('en');
  return {
    update({ rows, bytes, totalBytes }) {
      const known = totalBytes > 0;
      if (!bar) {
        bar = new SingleBar({
          stream,
          hideCursor: true,
          clearOnComplete: true,
          fps: 5,
          format: known
            ? `${verb} {bar} {percentage}% | {rows} rows | {rate} rows/s | ETA {eta_formatted}`
            : `${verb} {rows} rows | {rate} rows/s`,
        });
        bar.start(known ? totalBytes : 1, 0, { rows: '0', rate: '0' });
      }
      bar.update(known ? bytes : 0, { rows: rows.toLocaleString('en'), rate: rate(rows) });
    },
    finish() {
      bar?.stop();
    },
  };
}
