// The demo account's sample data: a pet shop and beauty salon in Brazil, with records in every
// resource. Built as an import file and loaded through the import (the same streaming COPY
// import as `balcao import`), so it passes the same validation. Deterministic (seeded), relative to `now`; ids are derived from the tenant so
// two accounts (or live and test data) never collide.
import { createHash } from 'node:crypto';
import type { KeyMode } from '../domain/api-keys.ts';
import { money, toJsonNumber } from '../domain/money.ts';
import { type ItemAmountsInput, saleAmounts } from '../domain/sale-totals.ts';
import { type AccountInput, insertAccount } from '../accounts/account-repository.ts';
import type { Database } from '../infra/db/engine/database.ts';
import { inBulkTransaction } from '../import/bulk-session.ts';
import type { ImportResourceName } from '../import/resources.ts';
import {
  CITIES,
  type City,
  cep,
  cnpj,
  cpf,
  EMAIL_DOMAINS,
  ean13,
  emailSlug,
  FEMALE_NAMES,
  landline,
  MALE_NAMES,
  mobilePhone,
  onlyDigits,
  STREETS,
  SURNAMES,
} from './brazil.ts';
import {
  DEMO_BANK_ACCOUNTS,
  DEMO_DELETED_PRODUCT,
  DEMO_PRODUCTS,
  DEMO_RECURRENCES,
  DEMO_SERVICES,
  DEMO_STAFF_ROLES,
  DEMO_STAGES,
  DEMO_SUPPLIERS,
  DEMO_SUPPLIES,
} from './catalog.ts';
import { Prng } from './prng.ts';
import { type ImportResult, importObject, importObjectInSession, loadImportSpecs } from '../import/stream-import.ts';

export const DEMO_SEED = 20_261_121;

/** How many records of each resource the demo holds (sales counts sales, orders and quotes). */
export const DEMO_COUNTS = {
  customers: 60,
  sales: 75,
  quotes: 5,
  appointments: 60,
  deals: 24,
  oneOffExpenses: 24,
} as const;

type DemoRecord = Record<string, unknown>;
/** The demo's import file: every resource key it fills (all of them). */
export type DemoFile = Record<ImportResourceName, DemoRecord[]> & { customers: DemoRecord[] };

export interface DemoOptions {
  /** The reference instant: records lie in the months before it, some appointments after it. */
  now?: Date;
}

const DAY = 86_400_000;
/** Brasília time (UTC−3): business hours are written as local hours. */
const BRT_OFFSET_HOURS = 3;

/** Seeds one mode of an existing account. */
export async function seedDemoData(
  database: Database,
  accountId: string,
  mode: KeyMode = 'live',
  options: DemoOptions = {},
): Promise<ImportResult> {
  return importObject(database, buildDemoData(accountId, mode, options), { accountId, mode });
}

/** Creates an account and seeds its live and test data in one transaction: all of it, or nothing. */
export async function createDemoAccount(
  database: Database,
  input: AccountInput & { name: string },
  options: DemoOptions = {},
): Promise<{ id: string }> {
  const specs = await loadImportSpecs(database);
  return inBulkTransaction(database.driver, async (session) => {
    const insert = insertAccount(database.db, input).compile();
    const [account] = await session.query<{ id: string }>(insert.sql, insert.parameters);
    const id = String(account?.id);
    for (const mode of ['live', 'test'] as const) {
      await importObjectInSession(session, specs, buildDemoData(id, mode, options), { accountId: id, mode });
    }
    return { id };
  });
}

/** What every section shares: the seeded generator (sections draw from it in a fixed order, so
 *  the data is the same on every run), ids derived from the tenant, and the calendar. */
interface DemoContext {
  prng: Prng;
  accountId: string;
  mode: KeyMode;
  /** Midnight UTC of the reference day, in milliseconds. */
  today: number;
  id: (label: string) => string;
  /** Local (Brasília) time `daysAgo` days before today, as a UTC ISO timestamp. */
  at: (daysAgo: number, hour: number, minute?: number) => string;
  dateOf: (daysAgo: number) => string;
  later: (iso: string, minutes: number) => string;
  users: string[];
  contractId: string;
  categories: { pet: string; beauty: string; retail: string };
  expenseCategories: Record<'rent' | 'utilities' | 'services' | 'stock' | 'staff' | 'marketing' | 'maintenance', string>;
  costCenters: string[];
  home: City;
}

function demoContext(accountId: string, mode: KeyMode, now: Date): DemoContext {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const id = (label: string) => derivedUuid(`${accountId}:${mode}:${label}`);
  return {
    prng: new Prng(DEMO_SEED),
    accountId,
    mode,
    today,
    id,
    at: (daysAgo, hour, minute = 0) =>
      new Date(today - daysAgo * DAY + (hour + BRT_OFFSET_HOURS) * 3_600_000 + minute * 60_000).toISOString(),
    dateOf: (daysAgo) => new Date(today - daysAgo * DAY).toISOString().slice(0, 10),
    later: (iso, minutes) => new Date(Date.parse(iso) + minutes * 60_000).toISOString(),
    users: [id('user:owner'), id('user:manager'), id('user:reception')],
    contractId: id('contract'),
    categories: { pet: id('category:pet'), beauty: id('category:beauty'), retail: id('category:retail') },
    expenseCategories: {
      rent: id('expense-category:rent'),
      utilities: id('expense-category:utilities'),
      services: id('expense-category:services'),
      stock: id('expense-category:stock'),
      staff: id('expense-category:staff'),
      marketing: id('expense-category:marketing'),
      maintenance: id('expense-category:maintenance'),
    },
    costCenters: [id('cost-center:pet'), id('cost-center:salon')],
    home: CITIES[0] as City,
  };
}

/** The whole demo file. Sections run in this order: each draws from the one generator. */
export function buildDemoData(accountId: string, mode: KeyMode, options: DemoOptions = {}): DemoFile {
  const ctx = demoContext(accountId, mode, options.now ?? new Date());
  const bankAccounts = bankAccountsOf(ctx);
  const dealStages = dealStagesOf(ctx);
  const services = servicesOf(ctx);
  const products = productsOf(ctx);
  const inventory = inventoryOf(ctx, products);
  const customers = customersOf(ctx);
  const { suppliers, staff } = suppliersOf(ctx);
  const expenseNumber = sequence((n) => `DESP-${String(n).padStart(5, '0')}`);
  const recurring = recurringExpensesOf(ctx, { suppliers, bankAccounts, expenseNumber });
  const oneOff = oneOffExpensesOf(ctx, { suppliers, staff, bankAccounts, expenseNumber });
  const { sales, quotes } = salesOf(ctx, { customers, services, products });
  const completedSales = sales.filter((s) => s.status === 'completed' && s.customer_id);
  return {
    customers,
    sales,
    suppliers,
    expenses: [...recurring.expenses, ...oneOff],
    recurring_expenses: recurring.recurringExpenses,
    appointments: appointmentsOf(ctx, { customers, completedSales }),
    services,
    products,
    inventory,
    bank_accounts: bankAccounts,
    deals: dealsOf(ctx, { customers, quotes, completedSales, dealStages }),
    deal_stages: dealStages,
  };
}

/** Numbers 1, 2, 3… formatted; shared by the sections that number one series. */
function sequence(format: (n: number) => string): () => string {
  let n = 0;
  return () => format(++n);
}

function bankAccountsOf(ctx: DemoContext): DemoRecord[] {
  const { prng, id, at, users } = ctx;
  return DEMO_BANK_ACCOUNTS.map((b, i) => ({
    id: id(`bank:${i}`),
    account_name: b.account_name,
    bank_name: b.bank_name,
    agency_number: b.agency,
    account_number: b.type === 'cash' ? null : `${prng.digits(5).join('')}-${prng.int(0, 9)}`,
    account_type: b.type,
    currency: 'BRL',
    initial_balance: b.initial,
    current_balance: toJsonNumber(money(b.initial + prng.int(-2_000, 12_000) + prng.int(0, 99) / 100)),
    is_active: true,
    archived: false,
    notes: b.type === 'cash' ? 'Dinheiro em espécie no caixa da recepção' : null,
    created_by: users[0],
    created_at: at(180, 9, i * 5),
    updated_at: at(prng.int(1, 10), 18),
  }));
}

function dealStagesOf(ctx: DemoContext): DemoRecord[] {
  const { id, at } = ctx;
  return DEMO_STAGES.map((s, i) => ({
    id: id(`stage:${i}`),
    name: s.name,
    color: s.color,
    position: i + 1,
    milestone: s.milestone,
    is_active: true,
    created_at: at(180, 10, i),
    updated_at: null,
  }));
}

function servicesOf(ctx: DemoContext): DemoRecord[] {
  const { prng, id, at, users, categories } = ctx;
  return DEMO_SERVICES.map((s, i) => ({
    id: id(`service:${i}`),
    name: s.name,
    description: s.description,
    category_id: s.forPets ? categories.pet : categories.beauty,
    duration_minutes: s.duration,
    price: s.price,
    requires_staff: true,
    color: s.color,
    is_active: s.name !== 'Consulta veterinária' || prng.chance(0.5),
    created_by: users[0],
    created_at: at(170, 11, i),
    updated_at: i % 3 === 0 ? at(prng.int(5, 60), 15) : null,
  }));
}

/** The catalogue, and one product deleted since (it must never be served). */
function productsOf(ctx: DemoContext): DemoRecord[] {
  const { prng, id, at, users, categories } = ctx;
  const productRecord = (p: (typeof DEMO_PRODUCTS)[number], i: number) => ({
    id: id(`product:${i}`),
    name: p.name,
    description: p.description,
    unit: p.unit,
    selling_price: p.price,
    cost_price: p.cost,
    is_variable_price: p.unit === 'kg',
    min_price: p.unit === 'kg' ? toJsonNumber(money(p.price * 0.9)) : null,
    max_price: p.unit === 'kg' ? p.price : null,
    ean_code: p.stocked ? ean13(prng) : null,
    internal_code: `PRD-${String(i + 1).padStart(3, '0')}`,
    category_id: /Ração|Petisco|Areia|pet|Coleira|mordedor|Tapete/.test(p.name) ? categories.pet : categories.retail,
    subcategory_id: null,
    current_stock: p.stocked ? p.stock : null,
    min_stock_alert: p.stocked ? p.minStock : null,
    manages_stock: p.stocked,
    is_in_catalog: true,
    allows_appointments: false,
    is_active: true,
    image_url: null,
    created_by: users[1],
    created_at: at(165, 14, i),
    updated_at: at(prng.int(1, 30), 16),
  });
  const products: DemoRecord[] = DEMO_PRODUCTS.map(productRecord);
  products.push({
    ...productRecord(DEMO_DELETED_PRODUCT, DEMO_PRODUCTS.length),
    is_active: false,
    is_in_catalog: false,
    deleted_at: at(20, 17),
    internal_notes: 'Substituída pela Ração premium 15kg',
  });
  return products;
}

/** Stock of the stocked products, and supplies used in the shop that are not for sale. */
function inventoryOf(ctx: DemoContext, products: DemoRecord[]): DemoRecord[] {
  const { prng, id, at } = ctx;
  const inventory: DemoRecord[] = [];
  DEMO_PRODUCTS.forEach((p, i) => {
    if (!p.stocked) return;
    const product = products[i] as DemoRecord;
    inventory.push({
      id: id(`inventory:${i}`),
      name: p.name,
      description: p.description,
      unit: p.unit,
      current_stock: p.stock,
      min_stock_alert: p.minStock,
      ean_code: product.ean_code,
      catalog_item_id: product.id,
      is_in_catalog: true,
      is_active: true,
      created_at: product.created_at,
      updated_at: at(prng.int(1, 15), 18, 30),
    });
  });
  DEMO_SUPPLIES.forEach((s, i) => {
    inventory.push({
      id: id(`supply:${i}`),
      name: s.name,
      description: 'Material de consumo interno',
      unit: s.unit,
      current_stock: s.stock,
      min_stock_alert: s.minStock,
      ean_code: null,
      catalog_item_id: null,
      is_in_catalog: false,
      is_active: true,
      created_at: at(160, 9, i),
      updated_at: null,
    });
  });
  return inventory;
}

function customersOf(ctx: DemoContext): DemoRecord[] {
  const { prng, id, at, users, contractId, home } = ctx;
  const customerNotes = [
    'Prefere atendimento pela manhã',
    'Cachorro: Thor (shih-tzu), muito agitado no secador',
    'Gata: Mel (siamês)',
    'Alergia a produtos com amônia',
    'Sempre paga no Pix',
    'Cliente desde a inauguração',
  ];
  const customers: DemoRecord[] = [];
  for (let i = 0; i < DEMO_COUNTS.customers; i++) {
    const female = prng.chance(0.62);
    const first = prng.pick(female ? FEMALE_NAMES : MALE_NAMES);
    const [s1, s2] = prng.sample(SURNAMES, 2) as [string, string];
    const city = prng.chance(0.55) ? home : prng.pick(CITIES);
    const hasEmail = prng.chance(0.85);
    const createdDaysAgo = prng.int(30, 240);
    customers.push({
      id: id(`customer:${i}`),
      full_name: `${first} ${s1} ${s2}`,
      email: hasEmail ? `${emailSlug(first, s2)}${prng.chance(0.4) ? prng.int(1, 99) : ''}@${prng.pick(EMAIL_DOMAINS)}` : null,
      phone: !hasEmail || prng.chance(0.9) ? mobilePhone(prng, city.ddd) : null,
      document: prng.chance(0.7) ? cpf(prng) : null,
      birth_date: prng.chance(0.75) ? `${prng.int(1958, 2006)}-${pad(prng.int(1, 12))}-${pad(prng.int(1, 28))}` : null,
      notes: prng.chance(0.25) ? prng.pick(customerNotes) : null,
      is_active: prng.chance(0.95),
      gender: prng.chance(0.9) ? (female ? 'female' : 'male') : null,
      address_country: 'BR',
      address_state: city.state,
      address_city: city.name,
      address_neighborhood: prng.pick(city.neighborhoods),
      address_street: prng.pick(STREETS),
      address_number: String(prng.int(10, 2500)),
      address_complement: prng.chance(0.3) ? `Apto ${prng.int(11, 184)}` : null,
      address_zip_code: cep(prng, city),
      accepts_communications: prng.chance(0.7),
      valid_whatsapp: null as boolean | null,
      profile_photo_url: null,
      whatsapp_photo: null,
      internal_notes: prng.chance(0.08) ? 'Cliente VIP: oferecer desconto de aniversário' : null,
      contract_id: contractId,
      created_by: prng.pick(users),
      created_at: at(createdDaysAgo, prng.int(9, 18), prng.int(0, 59)),
      updated_at: prng.chance(0.35) ? at(prng.int(1, 29), prng.int(9, 18), prng.int(0, 59)) : null,
    });
    const customer = customers[i] as DemoRecord;
    customer.valid_whatsapp = customer.phone ? prng.chance(0.9) : null;
  }
  return customers;
}

/** Companies the shop buys from, then the staff (paid as suppliers). */
function suppliersOf(ctx: DemoContext): { suppliers: DemoRecord[]; staff: DemoRecord[] } {
  const suppliers = DEMO_SUPPLIERS.map((s, i) => supplierOf(ctx, s, i));
  const staff = DEMO_STAFF_ROLES.map((role, i) => staffMemberOf(ctx, role, i));
  return { suppliers: [...suppliers, ...staff], staff };
}

function supplierOf(ctx: DemoContext, s: (typeof DEMO_SUPPLIERS)[number], i: number): DemoRecord {
  const { prng, id, at, users, home, accountId, mode } = ctx;
  const document = cnpj(prng);
  const domain = `${emailSlug(s.trade).replace(/\./g, '')}.com.br`;
  const email = `${s.kind === 'rent' || s.kind === 'service' ? 'financeiro' : 'vendas'}@${domain}`;
  const pixKeys: { type: string; key: string }[] = [{ type: 'cnpj', key: onlyDigits(document) }];
  if (prng.chance(0.5)) pixKeys.push({ type: 'email', key: email });
  if (prng.chance(0.4)) pixKeys.push({ type: 'random', key: derivedUuid(`${accountId}:${mode}:pix:${i}`) });
  const city = i < 4 ? prng.pick(CITIES) : home;
  return {
    id: id(`supplier:${i}`),
    name: s.trade,
    legal_name: s.legal,
    trade_name: s.trade,
    document_number: document,
    email,
    phone: landline(prng, city.ddd),
    phone1: prng.chance(0.6) ? mobilePhone(prng, city.ddd) : null,
    phone2: null,
    phone3: null,
    rg: null,
    code: `F${String(i + 1).padStart(3, '0')}`,
    birth_date: null,
    is_employee: false,
    is_active: i !== 3,
    address_street: prng.pick(STREETS),
    address_number: String(prng.int(10, 4000)),
    address_neighborhood: prng.pick(city.neighborhoods),
    address_city: city.name,
    address_state: city.state,
    address_country: 'BR',
    address_zip_code: cep(prng, city),
    pix_keys: pixKeys,
    created_by: users[0],
    created_at: at(175 - i, 10, i * 3),
    updated_at: i % 2 === 0 ? at(prng.int(10, 90), 11) : null,
  };
}

function staffMemberOf(ctx: DemoContext, role: (typeof DEMO_STAFF_ROLES)[number], i: number): DemoRecord {
  const { prng, id, at, users, home } = ctx;
  const first = prng.pick(role === 'Banhista' ? MALE_NAMES : FEMALE_NAMES);
  const surname = prng.pick(SURNAMES);
  const document = cpf(prng);
  const phone = mobilePhone(prng, home.ddd);
  return {
    id: id(`staff:${i}`),
    name: `${first} ${surname}`,
    legal_name: null,
    trade_name: null,
    document_number: document,
    email: `${emailSlug(first, surname)}@${prng.pick(EMAIL_DOMAINS)}`,
    phone,
    phone1: null,
    phone2: null,
    phone3: null,
    rg: `${prng.digits(2).join('')}.${prng.digits(3).join('')}.${prng.digits(3).join('')}-${prng.int(0, 9)}`,
    code: `COL${String(i + 1).padStart(2, '0')}`,
    birth_date: `${prng.int(1975, 2002)}-${pad(prng.int(1, 12))}-${pad(prng.int(1, 28))}`,
    is_employee: true,
    is_active: true,
    address_street: prng.pick(STREETS),
    address_number: String(prng.int(10, 999)),
    address_neighborhood: prng.pick(home.neighborhoods),
    address_city: home.name,
    address_state: home.state,
    address_country: 'BR',
    address_zip_code: cep(prng, home),
    pix_keys: [
      { type: 'cpf', key: onlyDigits(document) },
      { type: 'phone', key: `+${onlyDigits(phone)}` },
    ],
    internal_notes: `${role}; comissão de 40% sobre serviços`,
    created_by: users[0],
    created_at: at(150 - i * 7, 9),
    updated_at: null,
  };
}

/** The monthly bills (rent, utilities, services) and the expenses they generated so far. */
function recurringExpensesOf(
  ctx: DemoContext,
  { suppliers, bankAccounts, expenseNumber }: { suppliers: DemoRecord[]; bankAccounts: DemoRecord[]; expenseNumber: () => string },
): { expenses: DemoRecord[]; recurringExpenses: DemoRecord[] } {
  const { prng, id, at, dateOf, users, today, expenseCategories } = ctx;
  const supplierOf = (kind: string) => suppliers[DEMO_SUPPLIERS.findIndex((s) => s.kind === kind)] as DemoRecord;
  const expenses: DemoRecord[] = [];
  const recurringExpenses: DemoRecord[] = [];
  const todayDate = new Date(today);
  DEMO_RECURRENCES.forEach((r, i) => {
    const recurringId = id(`recurring:${i}`);
    const generated: DemoRecord[] = [];
    // Monthly, from four months back up to this month, on the recurrence's day.
    for (let back = 4; back >= 0; back--) {
      const due = Date.UTC(todayDate.getUTCFullYear(), todayDate.getUTCMonth() - back, r.day);
      if (due > today) break;
      const daysAgo = Math.round((today - due) / DAY);
      const amount =
        r.type === 'utilities' && r.description.startsWith('Energia') ? r.amount + prng.int(-80, 120) + prng.int(0, 99) / 100 : r.amount;
      const paid = daysAgo > 0;
      generated.push({
        id: id(`recurring:${i}:expense:${back}`),
        expense_number: expenseNumber(),
        expense_type: r.type,
        description: `${r.description} - ${MONTHS[new Date(due).getUTCMonth()]}/${new Date(due).getUTCFullYear()}`,
        original_amount: toJsonNumber(money(amount)),
        discount_amount: null,
        final_amount: toJsonNumber(money(amount)),
        category_id:
          r.type === 'rent' ? expenseCategories.rent : r.type === 'utilities' ? expenseCategories.utilities : expenseCategories.services,
        subcategory_id: null,
        cost_center_id: null,
        supplier_id: supplierOf(r.supplier).id,
        bank_account_id: (bankAccounts[i % 2] as DemoRecord).id,
        credit_card_id: r.method === 'credit_card' ? id('credit-card:0') : null,
        payment_method: r.method,
        check_number: null,
        installments: 1,
        status: paid ? 'paid' : 'pending',
        payment_date: paid ? dateOf(daysAgo) : null,
        due_date: dateOf(daysAgo),
        notes: null,
        tags: ['despesa fixa'],
        is_recurring: true,
        is_active: true,
        payment_reference: r.method === 'bank_slip' ? `${prng.digits(12).join('')}` : null,
        recurring_expense_id: recurringId,
        installment_number: null,
        total_installments: null,
        created_by: null,
        created_at: at(daysAgo + 5, 6),
        updated_at: paid ? at(daysAgo, 10) : null,
      });
    }
    const first = generated[0] as DemoRecord;
    const last = generated[generated.length - 1] as DemoRecord;
    const next = new Date(Date.UTC(todayDate.getUTCFullYear(), todayDate.getUTCMonth() + 1, r.day)).toISOString().slice(0, 10);
    recurringExpenses.push({
      id: recurringId,
      expense_template_id: first.id,
      recurrence_frequency: 'monthly',
      recurrence_interval: 1,
      start_date: first.due_date,
      end_date: r.type === 'rent' ? `${todayDate.getUTCFullYear() + 2}-12-${pad(r.day)}` : null,
      next_generation_date: next,
      last_generated_expense_id: last.id,
      is_active: true,
      created_by: users[0],
      created_at: at(Math.round((today - Date.parse(`${first.due_date}T00:00:00Z`)) / DAY) + 10, 9),
      updated_at: last.created_at,
    });
    expenses.push(...generated);
  });
  return { expenses, recurringExpenses };
}

/** Purchases, maintenance, marketing and staff commissions, some in installments. */
/** The one-off purchases (stock, supplies, maintenance, marketing) an expense may be; the first few are commissions. */
const ONE_OFF_PURCHASES = [
  { description: 'Compra de rações', type: 'stock', supplier: 0, min: 800, max: 3_500 },
  { description: 'Compra de petiscos e acessórios', type: 'stock', supplier: 1, min: 300, max: 1_200 },
  { description: 'Reposição de cosméticos', type: 'stock', supplier: 2, min: 250, max: 1_800 },
  { description: 'Compra de descartáveis', type: 'supplies', supplier: 3, min: 90, max: 400 },
  { description: 'Manutenção do secador', type: 'maintenance', supplier: null, min: 120, max: 450 },
  { description: 'Anúncios no Instagram', type: 'marketing', supplier: null, min: 150, max: 600 },
  { description: 'Material de limpeza', type: 'supplies', supplier: 3, min: 60, max: 250 },
] as const;

interface ExpenseRefs {
  suppliers: DemoRecord[];
  staff: DemoRecord[];
  bankAccounts: DemoRecord[];
  expenseNumber: () => string;
}

function oneOffExpensesOf(ctx: DemoContext, refs: ExpenseRefs): DemoRecord[] {
  const expenses: DemoRecord[] = [];
  for (let i = 0; i < DEMO_COUNTS.oneOffExpenses; i++) expenses.push(...oneOffExpenseOf(ctx, refs, i));
  return expenses;
}

/** One purchase or commission: a record per installment. */
function oneOffExpenseOf(ctx: DemoContext, { suppliers, staff, bankAccounts, expenseNumber }: ExpenseRefs, i: number): DemoRecord[] {
  const { prng, id, at, dateOf, users, expenseCategories, costCenters } = ctx;
  const kind = i < 5 ? null : prng.pick(ONE_OFF_PURCHASES);
  const worker = kind ? null : (staff[i % staff.length] as DemoRecord);
  const daysAgo = prng.int(-20, 100);
  const original = kind ? prng.int(kind.min * 100, kind.max * 100) / 100 : prng.int(1_800, 3_200);
  const discount = kind && prng.chance(0.2) ? toJsonNumber(money(original * 0.05)) : null;
  const finalAmount = toJsonNumber(money(original).minus(money(discount ?? 0)));
  const paid = daysAgo > 0 && prng.chance(0.85);
  const method = kind
    ? prng.weighted([
        ['pix', 4],
        ['bank_slip', 3],
        ['credit_card', 2],
        ['cash', 1],
      ] as const)
    : 'pix';
  const installments = kind && method === 'credit_card' && original > 500 ? 3 : 1;
  const base = {
    expense_type: kind ? kind.type : 'payroll',
    description: kind ? kind.description : `Comissão - ${worker?.name}`,
    category_id: kind
      ? kind.type === 'stock' || kind.type === 'supplies'
        ? expenseCategories.stock
        : kind.type === 'marketing'
          ? expenseCategories.marketing
          : expenseCategories.maintenance
      : expenseCategories.staff,
    subcategory_id: null,
    cost_center_id: prng.pick(costCenters),
    supplier_id: kind ? (kind.supplier === null ? null : (suppliers[kind.supplier] as DemoRecord).id) : worker?.id,
    bank_account_id: (bankAccounts[prng.int(0, 1)] as DemoRecord).id,
    credit_card_id: method === 'credit_card' ? id('credit-card:0') : null,
    payment_method: method,
    check_number: null,
    installments,
    notes: prng.chance(0.2) ? 'Nota fiscal arquivada na pasta do mês' : null,
    tags: kind ? [kind.type === 'stock' ? 'estoque' : kind.type === 'marketing' ? 'marketing' : 'operacional'] : ['equipe'],
    is_recurring: false,
    is_active: !(i % 17 === 16),
    recurring_expense_id: null,
    created_by: prng.pick(users),
    internal_notes: i % 9 === 0 ? 'Conferir valor com o fornecedor' : null,
  };
  const records: DemoRecord[] = [];
  for (let n = 1; n <= installments; n++) {
    const due = daysAgo - (n - 1) * 30;
    const installmentPaid = paid && due > 0;
    const share = installments === 1 ? finalAmount : toJsonNumber(money(finalAmount / installments));
    records.push({
      ...base,
      id: id(`expense:${i}:${n}`),
      expense_number: expenseNumber(),
      description: installments === 1 ? base.description : `${base.description} (${n}/${installments})`,
      original_amount: installments === 1 ? toJsonNumber(money(original)) : share,
      discount_amount: installments === 1 ? discount : null,
      final_amount: share,
      status: installmentPaid ? 'paid' : 'pending',
      payment_date: installmentPaid ? dateOf(due) : null,
      due_date: dateOf(due),
      payment_reference: installmentPaid && method === 'pix' ? `E${prng.digits(20).join('')}` : null,
      installment_number: installments === 1 ? null : n,
      total_installments: installments === 1 ? null : installments,
      created_at: at(Math.max(daysAgo, 0) + 3, prng.int(9, 17), prng.int(0, 59)),
      updated_at: installmentPaid ? at(due, 11) : null,
    });
  }
  return records;
}

type Line = ItemAmountsInput & { catalog_type: 'product' | 'service'; catalog_item_id: string; notes: string | null };

/** The item records of a transaction: its lines with the amounts computed for them. */
function itemRecords(lines: Line[], amounts: ReturnType<typeof saleAmounts>) {
  return lines.map((line, n) => {
    const a = amounts.items[n] as (typeof amounts.items)[number];
    return {
      catalog_type: line.catalog_type,
      catalog_item_id: line.catalog_item_id,
      quantity: toJsonNumber(a.quantity),
      unit_price: toJsonNumber(a.unit_price),
      discount_amount: a.discount_amount ? toJsonNumber(a.discount_amount) : null,
      discount_percentage: a.discount_percentage ? toJsonNumber(a.discount_percentage) : null,
      subtotal: toJsonNumber(a.subtotal),
      total_amount: toJsonNumber(a.total_amount),
      notes: line.notes,
    };
  });
}

interface Catalog {
  customers: DemoRecord[];
  services: DemoRecord[];
  products: DemoRecord[];
}

/** One to four lines of services and products, some discounted. */
function pickLines({ prng }: DemoContext, { services, products }: Catalog): Line[] {
  const lines: Line[] = [];
  const count = prng.weighted([
    [1, 4],
    [2, 4],
    [3, 2],
    [4, 1],
  ] as const);
  for (let n = 0; n < count; n++) {
    const discount = prng.chance(0.12);
    if (prng.chance(0.55)) {
      const k = prng.int(0, DEMO_SERVICES.length - 1);
      const s = DEMO_SERVICES[k] as (typeof DEMO_SERVICES)[number];
      lines.push({
        catalog_type: 'service',
        catalog_item_id: (services[k] as DemoRecord).id as string,
        quantity: 1,
        unit_price: s.price,
        discount_percentage: discount ? 10 : null,
        discount_amount: null,
        notes: null,
      });
    } else {
      const k = prng.int(0, DEMO_PRODUCTS.length - 1);
      const p = DEMO_PRODUCTS[k] as (typeof DEMO_PRODUCTS)[number];
      lines.push({
        catalog_type: 'product',
        catalog_item_id: (products[k] as DemoRecord).id as string,
        quantity: p.unit === 'kg' ? prng.pick([0.5, 1.25, 2, 3.75]) : prng.int(1, 3),
        unit_price: p.price,
        discount_percentage: null,
        discount_amount: discount ? 5 : null,
        notes: p.unit === 'kg' ? 'Pesado na balança da loja' : null,
      });
    }
  }
  return lines;
}

/** A transaction and when it was created (the numbering follows that order). */
interface Draft {
  record: DemoRecord;
  createdAt: string;
}

/** The status history of a sale created at `createdAt`: pending, then its final status. */
function saleHistory({ prng, later, users }: DemoContext, createdAt: string, status: string, isOrder: boolean): DemoRecord[] {
  const history: DemoRecord[] = [{ old_status: null, new_status: 'pending', change_reason: null, created_by: null, created_at: createdAt }];
  if (status !== 'pending') {
    history.push({
      old_status: 'pending',
      new_status: status,
      change_reason:
        status === 'cancelled' ? prng.pick(['Cliente desistiu da compra', 'Produto sem estoque', 'Pagamento não aprovado']) : null,
      created_by: prng.pick(users),
      created_at: later(createdAt, isOrder ? prng.int(60, 60 * 48) : prng.int(1, 30)),
    });
  }
  return history;
}

/** The `i`-th sale or order (one in five is an order, delivered). */
function saleDraft(ctx: DemoContext, catalog: Catalog, i: number): Draft {
  const { prng, id, at, dateOf, users } = ctx;
  const daysAgo = prng.int(1, 120);
  const createdAt = at(daysAgo, prng.int(9, 19), prng.int(0, 59));
  const isOrder = prng.chance(0.2);
  const lines = pickLines(ctx, catalog);
  const fee = isOrder ? prng.pick([9.9, 12, 15, 19.9]) : null;
  const amounts = saleAmounts(lines, fee);
  const status =
    daysAgo <= 3
      ? prng.weighted([
          ['pending', 3],
          ['completed', 2],
        ] as const)
      : prng.weighted([
          ['completed', 18],
          ['cancelled', 1],
          ['pending', 1],
        ] as const);
  const history = saleHistory(ctx, createdAt, status, isOrder);
  const lastChange = history[history.length - 1] as DemoRecord;
  const method = prng.weighted([
    ['pix', 45],
    ['credit_card', 25],
    ['debit_card', 15],
    ['cash', 15],
  ] as const);
  return {
    createdAt,
    record: {
      id: id(`sale:${i}`),
      customer_id: prng.chance(0.9) ? (prng.pick(catalog.customers) as DemoRecord).id : null,
      transaction_type: isOrder ? 'order' : 'sale',
      status,
      sale_date: createdAt,
      delivery_date: isOrder ? dateOf(daysAgo - prng.int(1, 3)) : null,
      subtotal: toJsonNumber(amounts.subtotal),
      discount_amount: toJsonNumber(amounts.discount_amount),
      discount_percentage: null,
      tax_amount: null,
      total_amount: toJsonNumber(amounts.total_amount),
      notes: isOrder ? 'Entrega pelo motoboy parceiro' : prng.chance(0.1) ? 'Cliente pediu nota fiscal' : null,
      payment_method: method,
      payment_status: status === 'completed' ? 'paid' : status === 'cancelled' ? 'refunded' : 'pending',
      delivery_fee: amounts.delivery_fee ? toJsonNumber(amounts.delivery_fee) : null,
      order_code: isOrder ? `PED-${1000 + i}` : null,
      is_active: true,
      created_by: prng.pick(users),
      created_at: createdAt,
      updated_at: lastChange.created_at === createdAt ? null : lastChange.created_at,
      items: itemRecords(lines, amounts),
      status_history: history,
    },
  };
}

/** The `i`-th quote, sent to an active customer. */
function quoteDraft(ctx: DemoContext, catalog: Catalog, activeCustomers: DemoRecord[], i: number): Draft {
  const { prng, id, at } = ctx;
  const createdAt = at(prng.int(3, 40), prng.int(9, 18));
  const lines = pickLines(ctx, catalog);
  const amounts = saleAmounts(lines, null);
  return {
    createdAt,
    record: {
      id: id(`quote:${i}`),
      customer_id: (prng.pick(activeCustomers) as DemoRecord).id,
      transaction_type: 'quote',
      status: 'sent',
      sale_date: null,
      subtotal: toJsonNumber(amounts.subtotal),
      discount_amount: toJsonNumber(amounts.discount_amount),
      total_amount: toJsonNumber(amounts.total_amount),
      notes: 'Orçamento válido por 15 dias',
      is_active: true,
      internal_notes: 'Gerado a partir do funil de vendas',
      created_at: createdAt,
      items: itemRecords(lines, amounts),
      status_history: [{ old_status: null, new_status: 'sent', created_at: createdAt }],
    },
  };
}

/** Sales and orders with their items and status history, and quotes; numbered in creation order. */
function salesOf(ctx: DemoContext, catalog: Catalog): { sales: DemoRecord[]; quotes: DemoRecord[] } {
  const activeCustomers = catalog.customers.filter((c) => c.is_active);
  const drafts: Draft[] = [];
  for (let i = 0; i < DEMO_COUNTS.sales; i++) drafts.push(saleDraft(ctx, catalog, i));
  const quotes: DemoRecord[] = [];
  for (let i = 0; i < DEMO_COUNTS.quotes; i++) {
    const draft = quoteDraft(ctx, catalog, activeCustomers, i);
    quotes.push(draft.record);
    drafts.push(draft);
  }
  // Transaction numbers 1..N in the order the transactions were created (the counter follows).
  drafts.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || String(a.record.id).localeCompare(String(b.record.id)));
  drafts.forEach((d, n) => {
    d.record.transaction_number = String(n + 1);
  });
  return { sales: drafts.map((d) => d.record), quotes };
}

/** Past appointments (some linked to the sale they became) and the next two weeks' bookings. */
function appointmentsOf(
  ctx: DemoContext,
  { customers, completedSales }: { customers: DemoRecord[]; completedSales: DemoRecord[] },
): DemoRecord[] {
  const { prng, id, at, dateOf, users } = ctx;
  const activeCustomers = customers.filter((c) => c.is_active);
  const appointments: DemoRecord[] = [];
  for (let i = 0; i < DEMO_COUNTS.appointments; i++) {
    const future = i >= 40;
    const daysAgo = future ? -prng.int(0, 14) : prng.int(1, 30);
    const k = prng.int(0, DEMO_SERVICES.length - 1);
    const service = DEMO_SERVICES[k] as (typeof DEMO_SERVICES)[number];
    const startMinutes = 9 * 60 + prng.int(0, 17) * 30;
    const endMinutes = startMinutes + service.duration;
    const status = future
      ? prng.weighted([
          ['scheduled', 3],
          ['confirmed', 2],
        ] as const)
      : prng.weighted([
          ['completed', 17],
          ['cancelled', 2],
          ['no_show', 1],
        ] as const);
    const customer = prng.pick(activeCustomers) as DemoRecord;
    const sale = status === 'completed' && prng.chance(0.4) ? completedSales.find((s) => s.customer_id === customer.id) : undefined;
    const bookedDaysAgo = Math.max(daysAgo, 0) + prng.int(1, 10);
    appointments.push({
      id: id(`appointment:${i}`),
      customer_id: customer.id,
      appointment_date: dateOf(daysAgo),
      start_time: clock(startMinutes),
      end_time: clock(endMinutes),
      status,
      appointment_type: service.name,
      notes: prng.chance(0.2) ? prng.pick(['Usar shampoo hipoalergênico', 'Cliente pediu tosa baixa', 'Trazer a cartela de cores']) : null,
      customer_notes: prng.chance(0.15)
        ? prng.pick(['Vou chegar 10 minutos antes', 'Posso levar meu filho junto?', 'Prefiro a mesma profissional da última vez'])
        : null,
      cancellation_reason: status === 'cancelled' ? prng.pick(['Cliente remarcou', 'Imprevisto do cliente', 'Pet doente']) : null,
      has_passed: daysAgo > 0,
      transaction_id: sale ? sale.id : null,
      pet_id: service.forPets ? id(`pet:${customers.indexOf(customer)}`) : null,
      is_active: status !== 'cancelled',
      created_by: prng.pick(users),
      created_at: at(bookedDaysAgo, prng.int(9, 18), prng.int(0, 59)),
      // Confirmed the evening before at the latest; past ones updated when they happened.
      updated_at: status === 'scheduled' ? null : at(Math.max(daysAgo, 1), 19),
    });
  }
  return appointments;
}

/** The funnel: deals in every stage, linked to quotes and won sales. */
function dealsOf(
  ctx: DemoContext,
  {
    customers,
    quotes,
    completedSales,
    dealStages,
  }: { customers: DemoRecord[]; quotes: DemoRecord[]; completedSales: DemoRecord[]; dealStages: DemoRecord[] },
): DemoRecord[] {
  const { prng, id, at, later, users } = ctx;
  const deals: DemoRecord[] = [];
  const stageWeights = [5, 4, 4, 3, 5, 3];
  let quoteIndex = 0;
  for (let i = 0; i < DEMO_COUNTS.deals; i++) {
    const s = prng.weighted(stageWeights.map((w, n) => [n, w] as const));
    const stage = DEMO_STAGES[s] as (typeof DEMO_STAGES)[number];
    const status = stage.milestone ?? 'open';
    const createdDaysAgo = prng.int(5, 90);
    const createdAt = at(createdDaysAgo, prng.int(9, 18), prng.int(0, 59));
    const customer = prng.pick(customers) as DemoRecord;
    const quote = (s === 2 || s === 3) && quoteIndex < quotes.length ? (quotes[quoteIndex++] as DemoRecord) : null;
    const won = status === 'won' ? completedSales[i % completedSales.length] : undefined;
    // Between its creation and yesterday.
    const enteredAt = later(createdAt, prng.int(0, (createdDaysAgo - 1) * 24 * 60));
    deals.push({
      id: id(`deal:${i}`),
      customer_id: quote ? quote.customer_id : won ? won.customer_id : customer.id,
      stage_id: (dealStages[s] as DemoRecord).id,
      status,
      origin_channel: prng.weighted([
        ['whatsapp', 5],
        ['instagram', 4],
        ['indicacao', 3],
        ['site', 1],
        ['google', 1],
      ] as const),
      estimated_value: quote ? quote.total_amount : toJsonNumber(money(prng.int(60, 1_500))),
      assigned_to_user_id: prng.chance(0.8) ? prng.pick(users) : null,
      lost_reason: status === 'lost' ? prng.pick(['Preço acima do orçamento', 'Escolheu um concorrente', 'Sem resposta do cliente']) : null,
      quote_transaction_id: quote ? quote.id : null,
      won_transaction_id: won ? won.id : null,
      entered_stage_at: enteredAt,
      closed_at: status === 'open' ? null : enteredAt,
      created_by: prng.pick(users),
      created_at: createdAt,
      updated_at: enteredAt,
    });
  }
  return deals;
}

const MONTHS = ['jan', 'fev', 'mar', 'abr', 'mai', 'jun', 'jul', 'ago', 'set', 'out', 'nov', 'dez'];

const pad = (n: number) => String(n).padStart(2, '0');
const clock = (minutes: number) => `${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}:00`;

/** A version-4-shaped UUID derived from a label: stable across runs, distinct per tenant. */
function derivedUuid(label: string): string {
  const b = createHash('sha256').update(label).digest();
  b[6] = ((b[6] as number) & 0x0f) | 0x40;
  b[8] = ((b[8] as number) & 0x3f) | 0x80;
  const h = b.subarray(0, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
