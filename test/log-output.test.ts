// The served process's JSON logs: the lines of one event-loop turn reach the destination in one
// write, in order; under load the lines of one interval; and what is pending is written at once on exit
// (flushSync). graceful-stop.test.ts shows the same on a real server: every access line of a
// stopping server is on its output.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { TurnBatchedLines } from '../src/cli/log-output.ts';

const turn = () => new Promise((resolve) => setImmediate(resolve));

test('the first lines after a quiet spell leave at the end of their turn, in one write, in order', async () => {
  const writes: string[] = [];
  const destination = { write: (text: string) => writes.push(text) > 0, flushSync: () => {} };
  const lines = new TurnBatchedLines(destination as unknown as ReturnType<typeof pino.destination>, 60_000);
  lines.write('a\n');
  lines.write('b\n');
  lines.write('c\n');
  assert.deepEqual(writes, [], 'nothing is written before the turn ends');
  await turn();
  assert.deepEqual(writes, ['a\nb\nc\n']);
  lines.write('d\n');
  await turn();
  assert.deepEqual(writes, ['a\nb\nc\n'], 'a line right behind a write waits for the interval');
});

test('under load, the lines of several turns within one interval leave in one write', async () => {
  const writes: string[] = [];
  const destination = { write: (text: string) => writes.push(text) > 0, flushSync: () => {} };
  const lines = new TurnBatchedLines(destination as unknown as ReturnType<typeof pino.destination>, 1_000);
  lines.write('a\n');
  await turn();
  lines.write('b\n');
  await turn();
  lines.write('c\n');
  await turn();
  assert.deepEqual(writes, ['a\n']);
  const until = Date.now() + 10_000;
  while (writes.length < 2 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(writes, ['a\n', 'b\nc\n']);
});

test('flushSync writes what is pending before returning, through a real destination', async (t) => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'balcao-log-'));
  t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
  const file = path.join(folder, 'out.log');
  const destination = pino.destination({ dest: file, sync: false });
  await new Promise((resolve) => destination.once('ready', resolve));
  const lines = new TurnBatchedLines(destination);
  const logger = pino({ base: null, timestamp: false }, lines);
  logger.info({ op: 'customers.list' }, 'request');
  logger.info({ op: 'customers.get' }, 'request');
  lines.flushSync();
  destination.destroy();
  const written = fs
    .readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    written.map((l) => l.op),
    ['customers.list', 'customers.get'],
  );
});
