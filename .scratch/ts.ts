import { isTimestamp, timestampMs } from '../src/import/validate-value.ts';
const cases = ['2026-11-21T10:00:00.000Z','2024-02-29T23:59:59.999Z','2023-02-29T10:00:00.000Z','2026-13-01T00:00:00.000Z','2026-04-31T00:00:00.000Z','2026-11-21T24:00:00.000Z','2026-11-21T10:60:00.000Z','0000-01-01T00:00:00.000Z','2026-1a-21T10:00:00.000Z','1900-02-29T00:00:00.000Z','2000-02-29T00:00:00.000Z'];
for (const c of cases) console.log(c, isTimestamp(c), timestampMs(c) !== undefined);
