// The explicit list of resources the API serves (greppable; nothing is auto-loaded).
import { appointments } from './descriptors/appointments.ts';
import { bankAccounts } from './descriptors/bank-accounts.ts';
import { customers } from './descriptors/customers.ts';
import { deals } from './descriptors/deals.ts';
import type { ResourceDescriptor } from './descriptor.ts';
import { expenses } from './descriptors/expenses.ts';
import { inventory } from './descriptors/inventory.ts';
import { products } from './descriptors/products.ts';
import { sales } from './descriptors/sales.ts';
import { services } from './descriptors/services.ts';
import { suppliers } from './descriptors/suppliers.ts';

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
