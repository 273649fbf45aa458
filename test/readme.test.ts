// The README and docs/ stand alone: no path outside the repository, every linked file exists, and
// the shell examples run as pasted into bash on a fresh Debian (curl -g for filter brackets, no uuidgen).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pages = ['README.md', ...readdirSync(path.join(root, 'docs')).map((f) => `docs/${f}`)].filter((f) => f.endsWith('.md'));
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const shellBlocks = (text: string) => [...text.matchAll(/```(?:sh|bash)\n([\s\S]*?)```/g)].map((m) => m[1] as string);

describe('README and docs/ are self-contained', () => {
  test('no link or path leaves the repository, and every relative link resolves', () => {
    for (const file of pages) {
      const text = read(file);
      assert.doesNotMatch(text, /\.\.\/shared|\/work\//, file);
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target as string)) continue;
        const resolved = path.resolve(path.dirname(path.join(root, file)), target as string);
        assert.ok(resolved.startsWith(root), `${file} links outside the repository: ${target}`);
        assert.ok(existsSync(resolved), `${file} links to a missing file: ${target}`);
      }
    }
  });

  test('shell examples: curl -g wherever a URL has brackets, and no uuidgen', () => {
    for (const file of pages) {
      for (const block of shellBlocks(read(file))) {
        assert.doesNotMatch(block, /\buuidgen\b/, file);
        for (const line of block.split('\n').filter((l) => /^\s*curl\b/.test(l) && /\[[a-z_]+\]/.test(l))) {
          assert.match(line, /\bcurl -g\b|--globoff/, `${file}: ${line}`);
        }
      }
    }
  });

  test('docs/ holds the API guide with each topic', () => {
    const guide = read('docs/api-guide.md');
    for (const topic of ['Authentication', 'Pagination', 'Filters', 'Errors', 'Rate limits', 'Idempotency', 'Test mode']) {
      assert.match(guide, new RegExp(`^## ${topic}$`, 'm'), topic);
    }
    assert.match(guide, /\/v1\/openapi\.json/);
    assert.match(guide, /`\/docs`/);
  });
});
