#!/usr/bin/env bash
# Packs @balcao/client (its prepack builds dist/ with the checkout's TypeScript) and installs the tarball in empty
# projects, one with TypeScript 5 and one with the newest TypeScript, each type-checking a use of the client.
# Needs the npm registry. The tarball is left in $1 (default: artifacts/ of the checkout).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here/../../artifacts}" && cd "${1:-$here/../../artifacts}" && pwd)
tarball="$out/$(cd "$here" && npm pack --silent --pack-destination "$out")"
for ts in 5 latest; do
  dir=$(mktemp -d "/tmp/balcao-client-ts$ts.XXXXXX")
  (
    cd "$dir"
    echo '{"name":"empty","private":true,"type":"module"}' > package.json
    npm install --no-audit --no-fund --silent "$tarball" "typescript@$ts" @types/node@20 >/dev/null
    cat > tsconfig.json <<'JSON'
{ "compilerOptions": { "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true, "noEmit": true, "types": ["node"] }, "include": ["use.ts"] }
JSON
    cat > use.ts <<'TS'
import { BalcaoError, createClient, verifyWebhook, type Customer, type WebhookEvent } from '@balcao/client';
const client = createClient({ baseUrl: 'https://api.example.com', apiKey: 'balcao_live_x' });
export async function run(): Promise<void> {
  for await (const c of client.customers.all({ filter: { is_active: { eq: true } } })) console.log(c.full_name);
  const sale = await client.sales.create({ items: [{ catalog_type: 'product', catalog_item_id: 'x', quantity: 1, unit_price: 2 }] });
  const total: number | null = sale.total_amount;
  const customer: Customer = await client.customers.get('id');
  await client.events.follow(undefined, (events, cursor) => console.log(events.length, cursor));
  const event: WebhookEvent = verifyWebhook('{}', {}, 'whsec_x');
  try {
    await client.me();
  } catch (err) {
    if (err instanceof BalcaoError) console.log(err.code, err.errors, err.requestId);
  }
  console.log(total, customer.id, event.type);
}
TS
    npx tsc -p . && echo "@balcao/client with TypeScript $(npx tsc --version | sed 's/Version //'): installs and type-checks"
  )
  rm -rf "$dir"
done
