-- The whole data model of SPEC part 2, the operator tables (accounts, keys) and idempotency.
-- Every account-owned table carries the tenant (team_id, mode): mode 'live' or 'test' is the
-- test-mode partition of DECISIONS B.2. Internal columns (team_id, contract_id, created_by,
-- internal_notes) live here and never leave through a response schema.
-- Keyset indexes are (team_id, mode, <sort column>, id) so every page is one index range scan.

CREATE TABLE accounts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  plan_code text NOT NULL CHECK (plan_code IN ('free', 'starter', 'pro', 'enterprise')),
  modules text[] NOT NULL DEFAULT '{}',
  api_enabled boolean NOT NULL DEFAULT true,
  read_only boolean NOT NULL DEFAULT false,
  burst_per_second integer,
  requests_per_minute_read integer,
  requests_per_minute_write integer,
  requests_per_day_total integer,
  is_demo boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz
);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  account_id uuid NOT NULL REFERENCES accounts (id),
  name text NOT NULL,
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  secret_hash text NOT NULL UNIQUE,
  last4 text NOT NULL,
  scopes text[] NOT NULL DEFAULT '{}',
  allowed_ips text[] NOT NULL DEFAULT '{}',
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE idempotency_keys (
  api_key_id uuid NOT NULL REFERENCES api_keys (id),
  idempotency_key text NOT NULL,
  signature text NOT NULL,
  state text NOT NULL CHECK (state IN ('in_progress', 'done')),
  response_status integer,
  response_body text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (api_key_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- Per-tenant counters (transaction_number): one row per (team, mode, name), bumped with
-- UPDATE ... RETURNING so concurrent creations serialize on the row.
CREATE TABLE tenant_counters (
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  name text NOT NULL,
  value bigint NOT NULL,
  PRIMARY KEY (team_id, mode, name)
);

CREATE TABLE customers (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  full_name text NOT NULL,
  email text,
  phone text,
  document text,
  birth_date date,
  notes text,
  is_active boolean DEFAULT true,
  gender text,
  address_country text,
  address_state text,
  address_city text,
  address_neighborhood text,
  address_street text,
  address_number text,
  address_complement text,
  address_zip_code text,
  accepts_communications boolean,
  valid_whatsapp boolean,
  profile_photo_url text,
  whatsapp_photo text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX customers_created ON customers (team_id, mode, created_at, id);
CREATE INDEX customers_updated ON customers (team_id, mode, updated_at, id);
CREATE INDEX customers_full_name ON customers (team_id, mode, full_name, id);
CREATE INDEX customers_email ON customers (team_id, mode, email);
CREATE INDEX customers_document ON customers (team_id, mode, document);

-- Sales and orders are transactions; other types (quotes, …) are stored but never served.
CREATE TABLE transactions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  customer_id uuid,
  transaction_type text NOT NULL,
  transaction_number text,
  status text,
  sale_date timestamptz,
  delivery_date date,
  subtotal numeric(14, 2),
  discount_amount numeric(14, 2),
  discount_percentage numeric(5, 2),
  tax_amount numeric(14, 2),
  total_amount numeric(14, 2),
  notes text,
  payment_method text,
  payment_status text,
  delivery_fee numeric(14, 2),
  order_code text,
  is_active boolean DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX transactions_created ON transactions (team_id, mode, created_at, id) WHERE transaction_type IN ('sale', 'order');
CREATE INDEX transactions_updated ON transactions (team_id, mode, updated_at, id) WHERE transaction_type IN ('sale', 'order');
CREATE INDEX transactions_sale_date ON transactions (team_id, mode, sale_date, id) WHERE transaction_type IN ('sale', 'order');
CREATE INDEX transactions_total ON transactions (team_id, mode, total_amount, id) WHERE transaction_type IN ('sale', 'order');
CREATE INDEX transactions_customer ON transactions (team_id, mode, customer_id);
CREATE INDEX transactions_status ON transactions (team_id, mode, status);
CREATE INDEX transactions_number ON transactions (team_id, mode, transaction_number);

CREATE TABLE transaction_items (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  transaction_id uuid NOT NULL REFERENCES transactions (id),
  catalog_type text NOT NULL,
  catalog_item_id uuid NOT NULL,
  quantity numeric(14, 3) NOT NULL,
  unit_price numeric(14, 2) NOT NULL,
  discount_amount numeric(14, 2),
  discount_percentage numeric(5, 2),
  subtotal numeric(14, 2) NOT NULL,
  total_amount numeric(14, 2) NOT NULL,
  notes text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transaction_items_transaction ON transaction_items (transaction_id, created_at, id);

CREATE TABLE transaction_status_history (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  transaction_id uuid NOT NULL REFERENCES transactions (id),
  old_status text,
  new_status text NOT NULL,
  change_reason text,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transaction_status_history_transaction ON transaction_status_history (transaction_id, created_at, id);

CREATE TABLE suppliers (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  name text,
  legal_name text,
  trade_name text,
  document_number text,
  email text,
  phone text,
  phone1 text,
  phone2 text,
  phone3 text,
  rg text,
  code text,
  birth_date date,
  is_employee boolean,
  is_active boolean DEFAULT true,
  address_street text,
  address_number text,
  address_neighborhood text,
  address_city text,
  address_state text,
  address_country text,
  address_zip_code text,
  pix_keys jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX suppliers_created ON suppliers (team_id, mode, created_at, id);
CREATE INDEX suppliers_updated ON suppliers (team_id, mode, updated_at, id);
CREATE INDEX suppliers_name ON suppliers (team_id, mode, name, id);
CREATE INDEX suppliers_document ON suppliers (team_id, mode, document_number);

CREATE TABLE bank_accounts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  account_name text NOT NULL,
  bank_name text,
  agency_number text,
  account_number text,
  account_type text,
  currency text,
  initial_balance numeric(14, 2),
  current_balance numeric(14, 2),
  is_active boolean DEFAULT true,
  archived boolean NOT NULL DEFAULT false,
  notes text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX bank_accounts_created ON bank_accounts (team_id, mode, created_at, id);
CREATE INDEX bank_accounts_updated ON bank_accounts (team_id, mode, updated_at, id);
CREATE INDEX bank_accounts_name ON bank_accounts (team_id, mode, account_name, id);

CREATE TABLE recurring_expenses (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  expense_template_id uuid NOT NULL,
  recurrence_frequency text NOT NULL,
  recurrence_interval integer NOT NULL DEFAULT 1,
  start_date date NOT NULL,
  end_date date,
  next_generation_date date NOT NULL,
  last_generated_expense_id uuid,
  is_active boolean DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX recurring_expenses_tenant ON recurring_expenses (team_id, mode, id);

CREATE TABLE expenses (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  expense_number text NOT NULL,
  expense_type text NOT NULL,
  description text NOT NULL,
  original_amount numeric(14, 2) NOT NULL,
  discount_amount numeric(14, 2),
  final_amount numeric(14, 2) NOT NULL,
  category_id uuid,
  subcategory_id uuid,
  cost_center_id uuid,
  supplier_id uuid,
  bank_account_id uuid,
  credit_card_id uuid,
  payment_method text,
  check_number text,
  installments integer,
  status text,
  payment_date date,
  due_date date,
  notes text,
  tags text[],
  is_recurring boolean DEFAULT false,
  is_active boolean DEFAULT true,
  payment_reference text,
  recurring_expense_id uuid,
  installment_number integer,
  total_installments integer,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX expenses_created ON expenses (team_id, mode, created_at, id);
CREATE INDEX expenses_updated ON expenses (team_id, mode, updated_at, id);
CREATE INDEX expenses_payment_date ON expenses (team_id, mode, payment_date, id);
CREATE INDEX expenses_due_date ON expenses (team_id, mode, due_date, id);
CREATE INDEX expenses_supplier ON expenses (team_id, mode, supplier_id);
CREATE INDEX expenses_status ON expenses (team_id, mode, status);
CREATE INDEX expenses_number ON expenses (team_id, mode, expense_number);

CREATE TABLE services (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  name text NOT NULL,
  description text,
  category_id uuid,
  duration_minutes integer NOT NULL,
  price numeric(14, 2),
  requires_staff boolean,
  color text,
  is_active boolean DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX services_created ON services (team_id, mode, created_at, id);
CREATE INDEX services_updated ON services (team_id, mode, updated_at, id);
CREATE INDEX services_name ON services (team_id, mode, name, id);

CREATE TABLE appointments (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  customer_id uuid NOT NULL,
  appointment_date date NOT NULL,
  start_time time NOT NULL,
  end_time time NOT NULL,
  status text NOT NULL,
  appointment_type text,
  notes text,
  customer_notes text,
  cancellation_reason text,
  has_passed boolean,
  transaction_id uuid,
  pet_id uuid,
  is_active boolean DEFAULT true,
  created_at timestamptz DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX appointments_created ON appointments (team_id, mode, created_at, id);
CREATE INDEX appointments_updated ON appointments (team_id, mode, updated_at, id);
CREATE INDEX appointments_date ON appointments (team_id, mode, appointment_date, id);
CREATE INDEX appointments_customer ON appointments (team_id, mode, customer_id);

-- Catalog items: the products resource. Soft-deleted items (deleted_at) are never served.
CREATE TABLE catalog_items (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  name text NOT NULL,
  description text,
  unit text NOT NULL DEFAULT 'un',
  selling_price numeric(14, 2) NOT NULL DEFAULT 0,
  cost_price numeric(14, 2) NOT NULL DEFAULT 0,
  is_variable_price boolean,
  min_price numeric(14, 2),
  max_price numeric(14, 2),
  ean_code text,
  internal_code text,
  category_id uuid,
  subcategory_id uuid,
  current_stock numeric(14, 3),
  min_stock_alert numeric(14, 3),
  manages_stock boolean,
  is_in_catalog boolean,
  allows_appointments boolean,
  is_active boolean DEFAULT true,
  image_url text,
  deleted_at timestamptz,
  created_at timestamptz DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX catalog_items_created ON catalog_items (team_id, mode, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX catalog_items_updated ON catalog_items (team_id, mode, updated_at, id) WHERE deleted_at IS NULL;
CREATE INDEX catalog_items_name ON catalog_items (team_id, mode, name, id) WHERE deleted_at IS NULL;
CREATE INDEX catalog_items_ean ON catalog_items (team_id, mode, ean_code);

CREATE TABLE inventory_items (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  name text NOT NULL,
  description text,
  unit text,
  current_stock numeric(14, 3),
  min_stock_alert numeric(14, 3),
  ean_code text,
  catalog_item_id uuid,
  is_in_catalog boolean,
  is_active boolean DEFAULT true,
  created_at timestamptz DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX inventory_items_created ON inventory_items (team_id, mode, created_at, id);
CREATE INDEX inventory_items_updated ON inventory_items (team_id, mode, updated_at, id);
CREATE INDEX inventory_items_name ON inventory_items (team_id, mode, name, id);

CREATE TABLE deal_stages (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  name text NOT NULL,
  color text,
  position integer NOT NULL,
  milestone text,
  is_active boolean DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz
);
CREATE INDEX deal_stages_position ON deal_stages (team_id, mode, position, id);

CREATE TABLE deals (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES accounts (id),
  mode text NOT NULL CHECK (mode IN ('live', 'test')),
  contract_id uuid,
  created_by uuid,
  internal_notes text,
  customer_id uuid NOT NULL,
  stage_id uuid NOT NULL,
  status text NOT NULL,
  origin_channel text NOT NULL,
  estimated_value numeric(14, 2),
  assigned_to_user_id uuid,
  lost_reason text,
  quote_transaction_id uuid,
  won_transaction_id uuid,
  entered_stage_at timestamptz NOT NULL DEFAULT now(),
  closed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deals_created ON deals (team_id, mode, created_at, id);
CREATE INDEX deals_updated ON deals (team_id, mode, updated_at, id);
CREATE INDEX deals_entered_stage ON deals (team_id, mode, entered_stage_at, id);
CREATE INDEX deals_closed ON deals (team_id, mode, closed_at, id);
CREATE INDEX deals_stage ON deals (team_id, mode, stage_id);
CREATE INDEX deals_customer ON deals (team_id, mode, customer_id);
