// `POST /v1/webhook-endpoints/{id}/test`: a signed event of type `ping`, sent to the endpoint at once, with
// the same signing, address checks and timeout as a delivery. It is not an event of the feed, nothing queues it
// and nothing records it: the answer is the attempt.
import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { Config } from '../config.ts';
import type { Tenant } from '../domain/tenant.ts';
import type { Db } from '../infra/db/engine/database.ts';
import { signingTarget } from './endpoint-repository.ts';
import type { PingEvent, webhookTestResult } from './endpoint-schema.ts';
import { postWebhook } from './post-webhook.ts';
import { signatureHeader } from './signing.ts';
import type { Tracing } from '../telemetry/tracing.ts';
import { describeAttempt } from './delivery-worker.ts';

export async function pingEndpoint(
  db: Db,
  tenant: Tenant,
  endpointId: string,
  requestId: string,
  config: Pick<Config, 'webhookAllowPrivate' | 'webhookTimeoutMs'>,
  tracing?: Tracing,
): Promise<Static<typeof webhookTestResult>> {
  const target = await signingTarget(db, tenant, endpointId);
  const id = randomUUID();
  const ping: PingEvent = {
    id,
    type: 'ping',
    created_at: new Date().toISOString(),
    data: { object: { endpoint_id: endpointId }, previous_attributes: null },
    request_id: requestId,
  };
  const body = JSON.stringify(ping);
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(target.secrets, id, timestamp, body),
  };
  const post = () =>
    postWebhook(target.url, headers, body, {
      timeoutMs: config.webhookTimeoutMs,
      allowPrivate: config.webhookAllowPrivate,
      signal: new AbortController().signal,
    });
  // With traces on, a span of the request's, and the POST carries its `traceparent` as a delivery does.
  const outcome = tracing
    ? await tracing.childSpan(
        'webhook test delivery',
        { 'balcao.webhook.endpoint_id': endpointId, 'balcao.event.type': 'ping' },
        (span) => {
          tracing.injectContext(headers);
          return post().then((done) => {
            if (span) describeAttempt(span, done);
            return done;
          });
        },
      )
    : await post();
  return {
    status: outcome.ok ? 'succeeded' : 'failed',
    response_status: outcome.status,
    error: outcome.error,
    duration_ms: outcome.durationMs,
  };
}
