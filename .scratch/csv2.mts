import fs from 'node:fs';
import { parse } from 'csv-parse';
import { openText } from '../src/import/sources.ts';
const src = { file: '/tmp/prof/customers.csv', format: 'csv', gzip: false, resource: 'customers', size: 0 } as const;
for (const variant of ['bytes', 'text-pipe', 'text-loop']) {
  const t = performance.now(); let n = 0;
  const csv = parse({ columns: true, bom: true, info: true, raw: true });
  if (variant === 'bytes') fs.createReadStream(src.file, { highWaterMark: 1 << 18 }).pipe(csv);
  else if (variant === 'text-pipe') (openText(src) as any).pipe(csv);
  else (async () => { for await (const c of openText(src)) if (!csv.write(c)) await new Promise((r) => csv.once('drain', r)); csv.end(); })();
  for await (const r of csv) n++;
  console.log(variant, n, (performance.now() - t).toFixed(0), 'ms');
}
