import { parse } from 'csv-parse/sync';
import { csvRecords } from '../src/import/csv-records.ts';
const cases = ['a,b\n\n1,2\n', 'a,b\n1,2', 'a,b\r\n1,2\r\n', 'a,b\n1,"x"y\n', 'a,b\n1,x"y\n', 'a,b\n1,"x\n', 'a,b\n"1" ,2\n', 'a,b\n"mul\nti",""\n"q""q",3\r\n', 'a,b,\n,,\n', '"a"\n""\n', 'x\n"a\r\nb"\n'];
for (const t of cases) {
  let ref: string; try { ref = JSON.stringify(parse(t)) } catch (e) { ref = 'ERR' }
  for (const size of [1, 2, 3, 1000]) {
    const chunks = async function* () { for (let i = 0; i < t.length; i += size) yield t.slice(i, i + size) };
    let mine: string; try { const out = []; for await (const r of csvRecords(chunks())) out.push(r.cells); mine = JSON.stringify(out) } catch (e) { mine = 'ERR' }
    if (mine !== ref) console.log('DIFF', JSON.stringify(t), size, ref, mine);
  }
}
const lines = []; for await (const r of csvRecords((async function*(){ yield 'h\n"a\nb"\nc\n"d"\n' })())) lines.push([r.line, r.cells, r.quotedEmpty]);
console.log(JSON.stringify(lines));
