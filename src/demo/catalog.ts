// What the demo business sells: a pet shop with a beauty salon ("Pet & Beleza"). Services are
// schedulable; products are catalog items, most of them stocked in the inventory.

export interface DemoService {
  name: string;
  description: string;
  duration: number;
  price: number;
  color: string;
  forPets: boolean;
}

export const DEMO_SERVICES: readonly DemoService[] = [
  {
    name: 'Banho e tosa',
    description: 'Banho completo com tosa na máquina ou tesoura',
    duration: 90,
    price: 95,
    color: '#3B82F6',
    forPets: true,
  },
  {
    name: 'Banho simples',
    description: 'Banho com shampoo neutro, secagem e escovação',
    duration: 60,
    price: 60,
    color: '#60A5FA',
    forPets: true,
  },
  {
    name: 'Tosa higiênica',
    description: 'Tosa das patas, barriga e região íntima',
    duration: 30,
    price: 40,
    color: '#93C5FD',
    forPets: true,
  },
  {
    name: 'Hidratação de pelagem',
    description: 'Máscara hidratante para pelos longos',
    duration: 30,
    price: 35,
    color: '#2563EB',
    forPets: true,
  },
  { name: 'Consulta veterinária', description: 'Avaliação clínica geral', duration: 40, price: 150, color: '#1D4ED8', forPets: true },
  { name: 'Corte feminino', description: 'Corte com lavagem e finalização', duration: 60, price: 120, color: '#EC4899', forPets: false },
  { name: 'Corte masculino', description: 'Corte na máquina e tesoura', duration: 30, price: 55, color: '#F472B6', forPets: false },
  { name: 'Escova modeladora', description: 'Escova com finalização', duration: 45, price: 70, color: '#DB2777', forPets: false },
  { name: 'Coloração', description: 'Coloração completa, produto incluso', duration: 120, price: 220, color: '#BE185D', forPets: false },
  {
    name: 'Manicure e pedicure',
    description: 'Cutilagem e esmaltação de mãos e pés',
    duration: 60,
    price: 65,
    color: '#F9A8D4',
    forPets: false,
  },
];

export interface DemoProduct {
  name: string;
  description: string;
  unit: string;
  price: number;
  cost: number;
  stock: number;
  minStock: number;
  /** Tracked in the inventory (and so linked to an inventory item). */
  stocked: boolean;
}

export const DEMO_PRODUCTS: readonly DemoProduct[] = [
  {
    name: 'Ração premium 15kg',
    description: 'Ração super premium para cães adultos',
    unit: 'un',
    price: 289.9,
    cost: 198.5,
    stock: 24,
    minStock: 6,
    stocked: true,
  },
  {
    name: 'Ração filhotes 3kg',
    description: 'Ração premium para filhotes de porte pequeno',
    unit: 'un',
    price: 89.9,
    cost: 58.4,
    stock: 31,
    minStock: 8,
    stocked: true,
  },
  {
    name: 'Ração gatos castrados 10kg',
    description: 'Ração para gatos adultos castrados',
    unit: 'un',
    price: 239.9,
    cost: 161.2,
    stock: 12,
    minStock: 4,
    stocked: true,
  },
  {
    name: 'Ração a granel',
    description: 'Ração econômica vendida por quilo',
    unit: 'kg',
    price: 14.9,
    cost: 8.75,
    stock: 85.5,
    minStock: 20,
    stocked: true,
  },
  {
    name: 'Petisco bifinho 500g',
    description: 'Petisco sabor carne',
    unit: 'un',
    price: 32.5,
    cost: 19.9,
    stock: 40,
    minStock: 10,
    stocked: true,
  },
  {
    name: 'Areia sanitária 4kg',
    description: 'Areia higiênica para gatos',
    unit: 'un',
    price: 27.9,
    cost: 15.3,
    stock: 3,
    minStock: 8,
    stocked: true,
  },
  {
    name: 'Shampoo pet neutro 500ml',
    description: 'Shampoo hipoalergênico para cães e gatos',
    unit: 'un',
    price: 39.9,
    cost: 21.0,
    stock: 18,
    minStock: 5,
    stocked: true,
  },
  {
    name: 'Coleira antipulgas',
    description: 'Proteção por 8 meses',
    unit: 'un',
    price: 159.9,
    cost: 102.0,
    stock: 9,
    minStock: 3,
    stocked: true,
  },
  {
    name: 'Brinquedo mordedor',
    description: 'Mordedor de borracha atóxica',
    unit: 'un',
    price: 24.9,
    cost: 11.2,
    stock: 27,
    minStock: 5,
    stocked: true,
  },
  {
    name: 'Shampoo antiqueda 300ml',
    description: 'Shampoo profissional para cabelos',
    unit: 'un',
    price: 54.9,
    cost: 29.9,
    stock: 14,
    minStock: 4,
    stocked: true,
  },
  {
    name: 'Máscara de hidratação 250g',
    description: 'Máscara capilar de tratamento intensivo',
    unit: 'un',
    price: 69.9,
    cost: 38.0,
    stock: 11,
    minStock: 4,
    stocked: true,
  },
  {
    name: 'Esmalte cremoso',
    description: 'Esmalte de longa duração, cores variadas',
    unit: 'un',
    price: 9.9,
    cost: 4.1,
    stock: 120,
    minStock: 30,
    stocked: true,
  },
  {
    name: 'Vale-presente',
    description: 'Crédito para serviços do salão',
    unit: 'un',
    price: 100,
    cost: 0,
    stock: 0,
    minStock: 0,
    stocked: false,
  },
  {
    name: 'Tapete higiênico (30 un)',
    description: 'Tapete absorvente para cães',
    unit: 'un',
    price: 79.9,
    cost: 47.5,
    stock: 16,
    minStock: 5,
    stocked: true,
  },
];

/** A product taken off the catalog: stored with deleted_at, never served. */
export const DEMO_DELETED_PRODUCT: DemoProduct = {
  name: 'Ração linha antiga 15kg',
  description: 'Fora de linha',
  unit: 'un',
  price: 249.9,
  cost: 170,
  stock: 0,
  minStock: 0,
  stocked: false,
};

/** Consumables kept in stock but not sold. */
export const DEMO_SUPPLIES = [
  { name: 'Luvas descartáveis (cx 100)', unit: 'cx', stock: 7, minStock: 3 },
  { name: 'Toalhas de banho', unit: 'un', stock: 42, minStock: 20 },
  { name: 'Oxidante 20 volumes 900ml', unit: 'L', stock: 4.5, minStock: 2 },
] as const;

export const DEMO_SUPPLIERS = [
  { legal: 'Distribuidora Pet Brasil Ltda', trade: 'Pet Brasil Distribuidora', kind: 'pet' },
  { legal: 'Nutrição Animal Premium S.A.', trade: 'NutriPet', kind: 'pet' },
  { legal: 'Cosméticos Bella Forma Ltda', trade: 'Bella Forma Profissional', kind: 'beauty' },
  { legal: 'Higiene & Cia Comércio de Descartáveis Ltda', trade: 'Higiene & Cia', kind: 'supplies' },
  { legal: 'Imobiliária Horizonte Ltda', trade: 'Horizonte Imóveis', kind: 'rent' },
  { legal: 'Companhia Energética Estadual S.A.', trade: 'Energia Estadual', kind: 'utility' },
  { legal: 'Conecta Fibra Telecomunicações Ltda', trade: 'Conecta Fibra', kind: 'utility' },
  { legal: 'Contábil Prime Assessoria Ltda', trade: 'Contábil Prime', kind: 'service' },
] as const;

/** Staff paid as suppliers (is_employee): groomers, hairdressers, a receptionist. */
export const DEMO_STAFF_ROLES = ['Tosadora', 'Banhista', 'Cabeleireira', 'Manicure', 'Recepcionista'] as const;

export const DEMO_BANK_ACCOUNTS = [
  { account_name: 'Conta PJ Nubank', bank_name: 'Nubank', agency: '0001', type: 'checking', initial: 15_000 },
  { account_name: 'Itaú Empresas', bank_name: 'Itaú Unibanco', agency: '0742', type: 'checking', initial: 8_500 },
  { account_name: 'Poupança Caixa', bank_name: 'Caixa Econômica Federal', agency: '1679', type: 'savings', initial: 20_000 },
  { account_name: 'Caixa da loja', bank_name: null, agency: null, type: 'cash', initial: 500 },
] as const;

export const DEMO_STAGES = [
  { name: 'Novo contato', color: '#94A3B8', milestone: null },
  { name: 'Qualificação', color: '#3B82F6', milestone: null },
  { name: 'Orçamento enviado', color: '#8B5CF6', milestone: null },
  { name: 'Negociação', color: '#F59E0B', milestone: null },
  { name: 'Fechado - ganho', color: '#22C55E', milestone: 'won' },
  { name: 'Fechado - perdido', color: '#EF4444', milestone: 'lost' },
] as const;

export const DEMO_RECURRENCES = [
  { description: 'Aluguel da loja', type: 'rent', amount: 4_800, day: 5, supplier: 'rent', method: 'bank_slip' },
  { description: 'Energia elétrica', type: 'utilities', amount: 612.37, day: 12, supplier: 'utility', method: 'bank_slip' },
  { description: 'Internet fibra 500 mega', type: 'utilities', amount: 149.9, day: 15, supplier: 'utility', method: 'credit_card' },
  { description: 'Honorários contábeis', type: 'services', amount: 890, day: 10, supplier: 'service', method: 'pix' },
] as const;
