// The shipped monitoring (deploy/prometheus/alerts.yml, deploy/grafana/balcao.json) is checked like code: promtool
// checks the rules and runs their unit tests (alerts.test.yml: each alert fires, and does not), every alert has its
// runbook line in docs/operations.md, and every metric a rule or a panel names is one the real server's /metrics
// serves. promtool is Debian's `prometheus` package; .ci/run installs it, and this file fails without it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BIN } from './helpers/cli.ts';
import { type Scratch, type ServeProcess, scratchWithKey, send, spawnServe } from './helpers/serve-process.ts';

const ROOT = path.resolve(path.dirname(BIN), '..');
const ALERTS = path.join(ROOT, 'deploy/prometheus/alerts.yml');
const ALERT_TESTS = path.join(ROOT, 'deploy/prometheus/alerts.test.yml');
const DASHBOARD = path.join(ROOT, 'deploy/grafana/balcao.json');

/** Metrics a rule or panel may name before the feature that serves them is merged (none now). */
const NOT_YET_SERVED = new Set<string>();

function promtool(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile('promtool', args, { cwd: ROOT }, (error, stdout, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
        reject(new Error("promtool not found: install Debian's prometheus package (apt-get install -y prometheus); .ci/run does"));
        return;
      }
      resolve({ code: error ? Number(error.code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

const alertNames = (text: string) => [...text.matchAll(/^\s*- alert: (\w+)$/gm)].map((m) => m[1]!);

/** Every metric name a rule, a panel or a variable names. */
function namedMetrics(): Map<string, string> {
  const named = new Map<string, string>();
  for (const m of fs.readFileSync(ALERTS, 'utf8').matchAll(/\bbalcao_[a-z0-9_]+/g)) named.set(m[0], 'deploy/prometheus/alerts.yml');
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8'));
  const expressions: string[] = [
    ...dashboard.panels.flatMap((p: { targets?: { expr: string }[] }) => (p.targets ?? []).map((t) => t.expr)),
    ...dashboard.templating.list.map((v: { definition?: string }) => v.definition ?? ''),
  ];
  for (const expr of expressions) for (const m of expr.matchAll(/\bbalcao_[a-z0-9_]+/g)) named.set(m[0], 'deploy/grafana/balcao.json');
  return named;
}

/** The series names /metrics serves: each family of `# TYPE`, with a histogram's _bucket, _sum and _count. */
function servedNames(text: string): Set<string> {
  const served = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    served.add(name!);
    if (type === 'histogram' || type === 'summary') for (const suffix of ['_bucket', '_sum', '_count']) served.add(`${name}${suffix}`);
  }
  return served;
}

describe('alert rules', () => {
  it('promtool check rules accepts deploy/prometheus/alerts.yml', async () => {
    const { code, output } = await promtool(['check', 'rules', ALERTS]);
    assert.equal(code, 0, output);
  });

  it('promtool test rules: every alert fires where it should and stays silent where it should not', async () => {
    const { code, output } = await promtool(['test', 'rules', ALERT_TESTS]);
    assert.equal(code, 0, output);
    const tests = fs.readFileSync(ALERT_TESTS, 'utf8');
    for (const alert of alertNames(fs.readFileSync(ALERTS, 'utf8'))) {
      const cases = [...tests.matchAll(new RegExp(`alertname: ${alert}\\n\\s*exp_alerts:(.*)`, 'g'))].map((m) => m[1]!.trim());
      assert.ok(cases.includes('[]'), `${alert}: a case where it does not fire`);
      assert.ok(
        cases.some((c) => c === ''),
        `${alert}: a case where it fires`,
      );
    }
  });

  it('every alert has its runbook line in docs/operations.md', () => {
    const runbook = fs.readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
    const alerts = alertNames(fs.readFileSync(ALERTS, 'utf8'));
    assert.equal(alerts.length, 7);
    for (const alert of alerts) assert.match(runbook, new RegExp(`^\\| \`${alert}\` \\|`, 'm'), `${alert} in the Alerts table`);
  });
});

describe('metrics named by the rules and the dashboard', () => {
  let scratch: Scratch;
  let server: ServeProcess;
  before(async () => {
    scratch = await scratchWithKey();
    server = await spawnServe(scratch.env);
  });
  after(async () => {
    server?.child.kill('SIGTERM');
    await server?.exited;
    await scratch?.cleanup();
  });

  it('are served by the real /metrics (or listed as not merged yet)', async () => {
    // One request first, so the request series have samples (their names are declared either way).
    assert.equal((await send(server.url, 'GET', '/v1/me', { key: scratch.key })).status, 200);
    const scraped = await send(server.metricsUrl, 'GET', server.metricsUrl);
    assert.equal(scraped.status, 200);
    const served = servedNames(scraped.text);
    const named = namedMetrics();
    assert.ok(named.size >= 15, `the rules and panels name ${named.size} metrics`);
    const missing = [...named].filter(([name]) => !served.has(name) && !NOT_YET_SERVED.has(name)).map(([n, where]) => `${n} (${where})`);
    assert.deepEqual(missing, [], 'named but not served by /metrics');
  });
});
