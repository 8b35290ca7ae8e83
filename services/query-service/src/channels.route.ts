import type { Express, Request, RequestHandler, Response } from 'express';
import {
  CHANNEL_ID_PATTERN,
  describeErrors,
  ok,
  type AnyChannelTarget,
  type ChannelTestResult,
  type ChannelValidators,
  type StateAlert,
  type Validators,
} from '@telemetry/contract';
import { CHANNELS, channelFor, type ChannelContext, type Notification } from '@telemetry/alerting';
import { AppError, rejectUnknown, type EgressPolicy } from '@telemetry/platform';
import { channelView, newChannelId, unmaskConfig, type ChannelStore, type StoredChannel } from '@telemetry/store';
import { channelOfCreate, refusal, refuseBadChannel, reminderProblems } from './channel-rules.js';
import { storeCall as storeCallOf, tenantOf, type ReadDeps } from './params.js';
import {
  checkIfMatch,
  conditionally,
  etagOf,
  invalid,
  jsonBody,
  keyOf,
  nowIso,
  refuseLimited,
} from './registry-objects.js';
import { deliveriesParams, sendDeliveries } from './webhook-deliveries.route.js';

import { recordChange, type Auditor } from './access/audit.js';

export interface ChannelRoutesDeps extends ReadDeps {
  store: ChannelStore;
  validators: Validators;
  channelValidators: ChannelValidators;
  /** Judges every address a channel sends to (the runner judges names again when it connects). */
  policy: EgressPolicy;
  auth: { read: RequestHandler; write: RequestHandler };
  /** The audit log (docs/access.md): each committed write is recorded. */
  audit: Auditor;
  /** ALERT_MIN_DELAY_SECONDS: the shortest reminder interval. */
  minDelaySeconds: number;
  /** PUBLIC_URL: the console's address, linked from a test notification. */
  publicUrl: string;
  /** What a test notification is sent with: this service's egress-bound HTTP client and mailer. */
  testContext: () => ChannelContext;
  /** CHANNEL_TESTS_PER_MINUTE: a tenant's test sends per minute (each replica counts its own). */
  testsPerMinute: number;
}

/** At most `limit` tests per tenant in any minute (per replica); 429 RATE_LIMITED beyond. */
function testBudget(limit: number): (tenantId: string, now: number) => void {
  const sent = new Map<string, number[]>();
  return (tenantId, now) => {
    const recent = (sent.get(tenantId) ?? []).filter((t) => t > now - 60_000);
    if (recent.length >= limit) {
      const wait = Math.max(1, Math.ceil((recent[0]! + 60_000 - now) / 1000));
      throw new AppError(
        'RATE_LIMITED',
        `this tenant may send ${limit} test notifications a minute`,
        { limit: 'CHANNEL_TESTS_PER_MINUTE' },
        { 'Retry-After': String(wait) },
      );
    }
    recent.push(now);
    sent.set(tenantId, recent);
  };
}

const CHANNEL_ID = new RegExp(CHANNEL_ID_PATTERN);

/** The path's channel id; anything else is no channel (404, as an unknown one). */
function channelIdOf(req: Request): string {
  const id = String(req.params.id);
  if (!CHANNEL_ID.test(id)) throw new AppError('CHANNEL_NOT_FOUND', 'there is no such channel');
  return id;
}

/** A test notification about a monitor named "Test notification" of the channel's tenant. */
function testNotification(c: StoredChannel, publicUrl: string, now: number): Notification {
  const at = new Date(Math.floor(now / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  const id = `test_${c.id}_${now}`;
  const alert: StateAlert = {
    id,
    type: 'monitor.down',
    monitor_id: 'test',
    tenant_id: c.tenant_id,
    incident_id: id,
    created_at: at,
    monitor: { name: 'Test notification', url: publicUrl },
    check: { id, status: 'down', response_time: 0, status_code: 0, created_at: at },
  };
  return {
    id,
    kind: 'test',
    items: [{ kind: 'test', alert, monitorLink: `${publicUrl.replace(/\/+$/, '')}/` }],
    attempt: 1,
  };
}

/** The resolve of a test: PagerDuty's and Opsgenie's key for it is `test-<notification id>`. */
function closing(test: Notification): Notification {
  const item = test.items[0]!;
  const alert: StateAlert = { ...item.alert, type: 'monitor.up', incident_id: `test-${test.id}` };
  return { ...test, kind: 'up', items: [{ kind: 'up', alert, monitorLink: item.monitorLink }] };
}

/**
 * Sends one test notification now, once (no retry), within the context's timeout and a
 * second more whatever the channel does: what the provider answered.
 */
async function sendTest(c: StoredChannel, ctx: ChannelContext, publicUrl: string): Promise<ChannelTestResult> {
  const channel = channelFor(CHANNELS, c.target);
  const config = c.target.config as never;
  const now = ctx.now();
  const test = testNotification(c, publicUrl, now);
  const renderCtx = { templates: c.templates, name: c.name, now };
  const rendered = channel.render(test, config, renderCtx);
  let timer: NodeJS.Timeout | undefined;
  const cutOff = new Promise<{ statusCode: number; error: 'timeout' }>((resolve) => {
    timer = setTimeout(() => resolve({ statusCode: 0, error: 'timeout' }), ctx.timeoutMs + 1000);
  });
  try {
    const answer = await Promise.race([channel.send(rendered, config, ctx), cutOff]);
    if (channel.paging && channel.classify(answer) === 'delivered') {
      // A paging service opened an incident for the test: close it at once (best effort),
      // or on-call would be paged by every test until someone resolved it there.
      await Promise.race([channel.send(channel.render(closing(test), config, renderCtx), config, ctx), cutOff]);
    }
    return {
      delivered: channel.classify(answer) === 'delivered',
      status_code: answer.statusCode,
      error: answer.error ?? null,
      ...('response' in answer && answer.response !== undefined ? { response: answer.response.slice(0, 1024) } : {}),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** /api/channels and /api/channels/{id}: a tenant's alert channels (docs/alerting.md, "API"). */
export function channelRoutes(app: Express, deps: ChannelRoutesDeps): void {
  const spendTest = testBudget(deps.testsPerMinute);
  const storeCall = <T>(req: Request, what: string, fn: () => Promise<T>): Promise<T> =>
    storeCallOf(deps.logger, req, what, fn);
  const load = async (req: Request, res: Response): Promise<StoredChannel> => {
    const id = channelIdOf(req);
    const c = await storeCall(req, 'channel lookup', () => deps.store.get(tenantOf(res), id));
    if (!c) throw new AppError('CHANNEL_NOT_FOUND', `there is no channel ${id}`);
    return c;
  };
  const shown = (res: Response, c: StoredChannel) => {
    res.setHeader('ETag', etagOf(c.version));
    return ok(channelView(c));
  };
  const refuseReminders = (remindEvery: number | undefined): void => {
    const problems = reminderProblems(remindEvery, deps.minDelaySeconds);
    if (problems.length > 0) throw invalid('channel', problems);
  };

  app.get('/api/channels', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    const all = await storeCall(req, 'channel list', () => deps.store.list(tenantOf(res)));
    res.json(ok(all.map(channelView)));
  });

  app.post('/api/channels', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'alert channels');
    const checked = channelOfCreate(await jsonBody(req), deps);
    if ('faults' in checked) throw refusal(checked.faults[0]!);
    const now = nowIso();
    const c = await storeCall(req, 'channel insert', () =>
      deps.store.create({
        ...checked.channel,
        id: newChannelId(),
        tenant_id: tenantOf(res),
        created_at: now,
        updated_at: now,
      }),
    );
    await recordChange(
      deps.audit,
      req,
      res,
      'channel.create',
      { type: 'channel', id: c.id },
      undefined,
      channelView(c),
    );
    res.status(201).setHeader('Location', `/api/channels/${c.id}`);
    res.json(shown(res, c));
  });

  app.get('/api/channels/:id', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    res.setHeader('Cache-Control', 'no-store');
    res.json(shown(res, await load(req, res)));
  });

  app.patch('/api/channels/:id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'alert channels');
    channelIdOf(req);
    const patch = await jsonBody(req);
    if (!deps.validators.channelPatch(patch))
      throw invalid('channel', describeErrors(deps.validators.channelPatch.errors));
    refuseReminders(patch.remind_every_seconds);
    let before: StoredChannel | undefined;
    const c = await conditionally(
      req,
      'channel',
      () => load(req, res),
      async (current) => {
        before = current;
        // What the PATCH sent masked is the stored secret.
        let config: object = current.target.config;
        if (patch.config !== undefined) {
          const unmasked = unmaskConfig(current.target.type, current.target.config, patch.config);
          if (unmasked.problems.length > 0) throw invalid('channel', unmasked.problems);
          config = unmasked.config;
        }
        const target = { type: current.target.type, config } as AnyChannelTarget;
        const templates = patch.templates ?? current.templates;
        refuseBadChannel(target, templates, deps.channelValidators, deps.policy);
        const { version: _v, ...rest } = current;
        return storeCall(req, 'channel update', () =>
          deps.store.update(
            {
              ...rest,
              key: patch.key === undefined ? current.key : patch.key,
              target,
              templates,
              name: patch.name ?? current.name,
              send_resolved: patch.send_resolved ?? current.send_resolved,
              remind_every_seconds: patch.remind_every_seconds ?? current.remind_every_seconds,
              remind_max: patch.remind_max ?? current.remind_max,
              updated_at: nowIso(),
            },
            current.version,
          ),
        );
      },
    );
    const target = { type: 'channel', id: c.id };
    await recordChange(deps.audit, req, res, 'channel.update', target, before && channelView(before), channelView(c), {
      before: before && { config: before.target.config },
      after: { config: c.target.config },
    });
    res.json(shown(res, c));
  });

  app.delete('/api/channels/:id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'alert channels');
    const current = await load(req, res);
    checkIfMatch(req, current.version, 'channel');
    // IN_USE is decided in the delete's transaction.
    const gone = await storeCall(req, 'channel delete', () => deps.store.remove(current.tenant_id, current.id));
    if (!gone) throw new AppError('CHANNEL_NOT_FOUND', `there is no channel ${current.id}`);
    const target = { type: 'channel', id: current.id };
    await recordChange(deps.audit, req, res, 'channel.delete', target, channelView(current), undefined);
    res.json(ok(null));
  });

  app.post('/api/channels/:id/test', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'alert channels');
    const c = await load(req, res);
    // NOTE: the stored target is judged again: EGRESS_ALLOW may have changed since it was saved.
    refuseBadChannel(c.target, c.templates, deps.channelValidators, deps.policy);
    spendTest(c.tenant_id, Date.now());
    const result = await sendTest(c, deps.testContext(), deps.publicUrl);
    deps.logger.info('channel test sent', {
      request_id: req.id,
      channel_id: c.id,
      type: c.target.type,
      delivered: result.delivered,
      status_code: result.status_code,
      error: result.error,
    });
    await deps.audit.record(req, res, {
      action: 'channel.test',
      target: { type: 'channel', id: c.id },
      outcome: result.delivered ? 'ok' : 'failed',
      changes: { delivered: { after: result.delivered }, status_code: { after: result.status_code } },
    });
    res.json(ok(result));
  });

  app.get('/api/channels/:id/deliveries', deps.auth.read, async (req, res) => {
    const params = deliveriesParams(req);
    // The log names every monitor of the tenant: not for a key limited to some of them.
    if (keyOf(res).monitorIds.size > 0) {
      throw new AppError('MONITOR_NOT_ALLOWED', "a key limited to some monitors cannot read a channel's delivery log");
    }
    const c = await load(req, res);
    await sendDeliveries(deps, req, res, { ...params, tenantId: c.tenant_id, channelId: c.id });
  });
}
