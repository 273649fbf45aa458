// Plan tiers (SPEC part 8) and the effective limits: plan values with the contract overrides.
export const PLAN_CODES = ['free', 'starter', 'pro', 'enterprise'] as const;
export type PlanCode = (typeof PLAN_CODES)[number];

export interface RateLimits {
  burst_per_second: number;
  requests_per_minute_read: number;
  requests_per_minute_write: number;
  requests_per_day_total: number;
}

export interface Plan {
  rateLimits: RateLimits;
  simultaneousKeys: number;
}

export const PLANS: Record<PlanCode, Plan> = {
  free: {
    rateLimits: { burst_per_second: 5, requests_per_minute_read: 30, requests_per_minute_write: 10, requests_per_day_total: 1_000 },
    simultaneousKeys: 1,
  },
  starter: {
    rateLimits: { burst_per_second: 10, requests_per_minute_read: 60, requests_per_minute_write: 30, requests_per_day_total: 10_000 },
    simultaneousKeys: 3,
  },
  pro: {
    rateLimits: { burst_per_second: 20, requests_per_minute_read: 300, requests_per_minute_write: 120, requests_per_day_total: 100_000 },
    simultaneousKeys: 10,
  },
  enterprise: {
    rateLimits: {
      burst_per_second: 50,
      requests_per_minute_read: 1_000,
      requests_per_minute_write: 500,
      requests_per_day_total: 1_000_000,
    },
    simultaneousKeys: 99,
  },
};

export const isPlanCode = (value: string): value is PlanCode => (PLAN_CODES as readonly string[]).includes(value);

export type RateLimitOverrides = { [K in keyof RateLimits]: number | null };

export function effectiveRateLimits(plan: PlanCode, overrides: Partial<RateLimitOverrides>): RateLimits {
  const base = PLANS[plan].rateLimits;
  return {
    burst_per_second: overrides.burst_per_second ?? base.burst_per_second,
    requests_per_minute_read: overrides.requests_per_minute_read ?? base.requests_per_minute_read,
    requests_per_minute_write: overrides.requests_per_minute_write ?? base.requests_per_minute_write,
    requests_per_day_total: overrides.requests_per_day_total ?? base.requests_per_day_total,
  };
}
