// Contract modules (SPEC part 1). Projects, forms, vehicles and pets are valid on contracts
// and appear in /v1/me, but have no endpoints (DECISIONS B.15).
export const MODULES = [
  'clientes',
  'vendas',
  'fornecedores',
  'despesas',
  'agendamentos',
  'catalogo',
  'estoque',
  'contas_bancarias',
  'projetos',
  'crm_funil',
  'formularios',
  'veiculos',
  'pets',
] as const;

export type ModuleName = (typeof MODULES)[number];

export const isModuleName = (value: string): value is ModuleName => (MODULES as readonly string[]).includes(value);
