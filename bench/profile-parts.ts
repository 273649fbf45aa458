// Where a CPU profile's time goes, by part of the request's path: each sample is given to the first frame,
// from the running function up its callers, whose source (through the build's source maps) belongs to a part.
// Node's own frames (node:…, native functions) take their caller's part: a buffer copied for postgres.js is the
// driver's. The system calls that write to a socket or pipe are a part of their own, whoever makes them.
import fs from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/** Parts, tried in order on each frame's original source path (or function name for V8's own frames). */
const PARTS: [part: string, test: RegExp][] = [
  ['idle', /^\(idle\)$/],
  // The system calls that hand bytes to the kernel, whoever calls them: the answer, the driver's messages, log lines.
  ['socket and pipe writes (system calls)', /^node:native:(writev|writeBuffer|writeString|writeUtf8String|writeLatin1String)$/],
  ['garbage collection', /^\(garbage collector\)$/],
  ['serialization', /fast-json-stringify|src\/http\/lazy-serializers|^\(serializer\)$/],
  ['logging', /node_modules\/(pino|sonic-boom|thread-stream)|src\/cli\/log-output|src\/http\/access-log|src\/infra\/log/],
  ['authentication', /src\/http\/authenticate|src\/accounts\/|src\/domain\/api-keys/],
  ['rate limits', /src\/http\/rate-limit|src\/infra\/rate-limit/],
  ['request id, metrics, stats', /src\/http\/(request-id|request-stats|metrics|request-tracing|deprecation|read-your-writes)/],
  ['routing', /node_modules\/find-my-way/],
  ['the driver (postgres.js)', /node_modules\/postgres\//],
  ['database layer (Kysely, src/infra/db)', /src\/infra\/db\/|node_modules\/kysely/],
  ['read engine, query, cursor', /src\/resources\/|src\/query\//],
  ['Fastify lifecycle', /node_modules\/(fastify|@fastify|avvio|light-my-request)/],
  ['other Balcão code', /^src\//],
  ['other packages', /node_modules\//],
  ['Node HTTP and sockets', /^node:/],
];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const maps = new Map<string, SourceMap | null>();

function sourceMap(url: string): SourceMap | null {
  if (!maps.has(url)) {
    const file = url.replace(/^file:\/\//, '');
    const mapFile = `${file}.map`;
    maps.set(url, file.startsWith('/') && fs.existsSync(mapFile) ? new SourceMap(JSON.parse(fs.readFileSync(mapFile, 'utf8'))) : null);
  }
  return maps.get(url)!;
}

/** A frame's original source, relative to the repository (node:… and V8's own names kept as they are). */
function originalSource(frame: CpuProfile['nodes'][number]['callFrame']): string {
  const { url, lineNumber, columnNumber, functionName } = frame;
  if (!url) {
    if (/^\(/.test(functionName)) return functionName; // (idle), (garbage collector), (program), (root)
    // Code made by new Function has lines (the precompiled serializers); Node's native functions have none.
    return lineNumber >= 0 ? '(serializer)' : `node:native:${functionName}`;
  }
  if (url.startsWith('node:')) return url;
  const map = sourceMap(url);
  const entry = map?.findEntry(lineNumber, columnNumber) as { originalSource?: string } | undefined;
  const source = entry?.originalSource ?? url.replace(/^file:\/\//, '');
  return path.relative(root, path.resolve(path.dirname(url.replace(/^file:\/\//, '')), source)).replace(/^(\.\.\/)+/, '');
}

/** Shares of the profile's time by part, largest first. */
export function timeByPart(profile: CpuProfile, detail?: Map<string, number>): { part: string; share: number }[] {
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const partOf = new Map<number, string>();
  const classify = (id: number): string => {
    const known = partOf.get(id);
    if (known) return known;
    const source = originalSource(byId.get(id)!.callFrame);
    const own = PARTS.find(([, test]) => test.test(source))?.[0];
    const up = parent.get(id);
    const part =
      own && own !== 'Node HTTP and sockets' ? own : up !== undefined && up !== profile.nodes[0]!.id ? classify(up) : (own ?? 'other');
    // A node: frame takes its caller's part, else stays Node's.
    const settled = own === 'Node HTTP and sockets' && part === 'other' ? own : part;
    partOf.set(id, settled);
    return settled;
  };
  const time = new Map<string, number>();
  let total = 0;
  for (const [i, id] of profile.samples.entries()) {
    const us = profile.timeDeltas[i] ?? 0;
    total += us;
    const part = classify(id);
    time.set(part, (time.get(part) ?? 0) + us);
    if (detail) {
      const f = byId.get(id)!.callFrame;
      const key = `${part} | ${f.functionName || '(anonymous)'} ${originalSource(f)}`;
      detail.set(key, (detail.get(key) ?? 0) + us);
    }
  }
  if (detail) for (const [key, us] of detail) detail.set(key, us / total);
  return [...time].map(([part, us]) => ({ part, share: us / total })).sort((a, b) => b.share - a.share);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const profile = JSON.parse(fs.readFileSync(process.argv[2]!, 'utf8')) as CpuProfile;
  const detail = new Map<string, number>();
  for (const { part, share } of timeByPart(profile, detail)) console.log(`${(100 * share).toFixed(1).padStart(6)}%  ${part}`);
  if (process.env.PROFILE_DETAIL) {
    for (const [key, share] of [...detail].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.PROFILE_DETAIL)))
      console.log(`${(100 * share).toFixed(2).padStart(6)}%  ${key}`);
  }
}
