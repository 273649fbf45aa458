// A Kysely plugin that keeps the statements an app builds (their operation nodes, in order) while `on`,
// compiled as the drivers receive them: tests read the SQL the app sends without a mock in its way.
import { type CompiledQuery, createQueryId, type KyselyPlugin, PostgresQueryCompiler, type RootOperationNode } from 'kysely';

export class StatementRecorder implements KyselyPlugin {
  readonly nodes: RootOperationNode[] = [];

  constructor(public on = false) {}

  transformQuery({ node }: { node: RootOperationNode }): RootOperationNode {
    if (this.on) this.nodes.push(node);
    return node;
  }

  async transformResult<T>({ result }: { result: T }): Promise<T> {
    return result;
  }

  statements(): CompiledQuery[] {
    const compiler = new PostgresQueryCompiler();
    return this.nodes.map((node) => compiler.compileQuery(node, createQueryId()));
  }

  /** The SQL text of the statements kept from the `from`-th on. */
  texts(from = 0): string[] {
    return this.statements()
      .slice(from)
      .map((q) => q.sql);
  }
}
