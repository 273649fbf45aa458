// The explicit list of resources the API serves (greppable; nothing is auto-loaded).
import { appointments } from './appointments.ts';
import { bankAccounts } from './bank-accounts.ts';
import { customers } from './customers.ts';
import { deals } from './deals.ts';
import type { ResourceDescriptor } from './descriptor.ts';
import { expenses } from './expenses.ts';
import { inventory } from './inventory.ts';
import { products } from './products.ts';
import { sales } from './sales.ts';
import { services } from './services.ts';
import { suppliers } from './suppliers.ts';

export const RESOURCES: readonly ResourceDescriptor[] = [
  customers,
  sales,
  suppliers,
  expenses,
  appointments,
  services,
  products,
  inventory,
  bankAccounts,
  deals,
];

export const resourceByName = (name: string): ResourceDescriptor | undefined => RESOURCES.find((r) => r.name === name);
