import {
  describeErrors,
  parsesAsUrl,
  type AnyChannelTarget,
  type ChannelType,
  type ChannelValidators,
  type Problem,
  type Validators,
} from '@telemetry/contract';
import { CHANNELS, templateProblems, type Templates } from '@telemetry/alerting';
import { AppError, connectUrl, type EgressPolicy } from '@telemetry/platform';
import { CHANNEL_DEFAULTS, type StoredChannel } from '@telemetry/store';
import { invalid } from './registry-objects.js';

/**
 * What a channel must be, past its JSON Schema, in the order problems are reported
 * (docs/alerting.md, "API"), for its routes and for a configuration document's channels
 * (config-as-code/channels.ts) alike: its type's config (400 VALIDATION_FAILED at `/config/...`),
 * its templates (400 INVALID_TEMPLATE), then every address it sends to, judged by the
 * egress policy as a monitor's webhooks are (400 TARGET_NOT_ALLOWED).
 */

/** The config's problems by its type's module, each at `/config/...`. */
function configProblems(type: ChannelType, config: unknown, validators: ChannelValidators): Problem[] {
  return CHANNELS[type]
    .validate(config, validators)
    .map((p) => ({ ...p, path: `/config${p.path === '/' ? '' : p.path}` }));
}

/** Every template of the channel: its own title and text, and a webhook's body template. */
function templatesOf(target: AnyChannelTarget, templates: Templates): { path: string; template: string }[] {
  const out: { path: string; template: string }[] = [];
  if (templates.title !== undefined) out.push({ path: '/templates/title', template: templates.title });
  if (templates.text !== undefined) out.push({ path: '/templates/text', template: templates.text });
  if (target.type === 'webhook' && target.config.body_template !== undefined) {
    out.push({ path: '/config/body_template', template: target.config.body_template });
  }
  return out;
}

/** The URL fields a channel connects to (the runner judges names again when it connects). */
const URL_FIELDS = ['url', 'api_url', 'server'] as const;

/** Where an SMTP URL connects: its port, else 465 (smtps) or 587 (smtp, STARTTLS), as nodemailer does. */
function smtpConnectUrl(raw: string): URL {
  const u = new URL(raw);
  const port = u.port || (u.protocol === 'smtps:' ? '465' : '587');
  return new URL(`http://${u.hostname}:${port}/`);
}

/** The channel's addresses that are IP literals (or ports) the policy denies: JSON pointers and why. */
export function deniedChannelTargets(target: AnyChannelTarget, policy: EgressPolicy): Problem[] {
  const config = target.config as Record<string, unknown>;
  const urls: { path: string; url: URL }[] = [];
  for (const field of URL_FIELDS) {
    const raw = config[field];
    if (typeof raw === 'string' && parsesAsUrl(raw))
      urls.push({ path: `/config/${field}`, url: connectUrl(new URL(raw)) });
  }
  if (target.type === 'email' && target.config.smtp && parsesAsUrl(target.config.smtp.url)) {
    urls.push({ path: '/config/smtp/url', url: smtpConnectUrl(target.config.smtp.url) });
  }
  return urls.flatMap(({ path, url }) => {
    const verdict = policy.checkUrl(url);
    return verdict && !verdict.allowed ? [{ path, message: verdict.reason }] : [];
  });
}

/** One kind of problem a channel has, with every problem of that kind, and the code the API answers it with. */
export interface ChannelFault {
  code: 'VALIDATION_FAILED' | 'INVALID_TEMPLATE' | 'TARGET_NOT_ALLOWED';
  problems: Problem[];
}

/**
 * A channel's problems past its body's schema, by kind in the API's order (config, then
 * templates, then targets), each kind only when it has any. `target.config` is the real
 * one (unmasked).
 */
export function channelFaults(
  target: AnyChannelTarget,
  templates: Templates,
  validators: ChannelValidators,
  policy: EgressPolicy,
): ChannelFault[] {
  const faults: ChannelFault[] = [
    { code: 'VALIDATION_FAILED', problems: configProblems(target.type, target.config, validators) },
    {
      code: 'INVALID_TEMPLATE',
      problems: templatesOf(target, templates).flatMap((t) => templateProblems(t.template, t.path)),
    },
    { code: 'TARGET_NOT_ALLOWED', problems: deniedChannelTargets(target, policy) },
  ];
  return faults.filter((f) => f.problems.length > 0);
}

/** The API's answer to a fault: its code, the first problem in the message, all of them in `details.problems`. */
export function refusal(fault: ChannelFault): AppError {
  const [first] = fault.problems;
  switch (fault.code) {
    case 'VALIDATION_FAILED':
      return invalid('channel', fault.problems);
    case 'INVALID_TEMPLATE':
      return new AppError('INVALID_TEMPLATE', `${first!.path}: ${first!.message}`, { problems: fault.problems });
    case 'TARGET_NOT_ALLOWED':
      return new AppError('TARGET_NOT_ALLOWED', `${first!.path}: ${first!.message}`, {
        path: first!.path,
        problems: fault.problems,
      });
  }
}

/**
 * Throws the first kind of problem a channel has (the schema checked before): its config,
 * then its templates, then its targets. `target.config` is the real one (unmasked).
 */
export function refuseBadChannel(
  target: AnyChannelTarget,
  templates: Templates,
  validators: ChannelValidators,
  policy: EgressPolicy,
): void {
  const [fault] = channelFaults(target, templates, validators, policy);
  if (fault) throw refusal(fault);
}

/** What judges a channel: the body's schemas, each type's config schema, the egress policy, the shortest delay. */
export interface ChannelRules {
  validators: Validators;
  channelValidators: ChannelValidators;
  policy: EgressPolicy;
  /** ALERT_MIN_DELAY_SECONDS: the shortest reminder interval. */
  minDelaySeconds: number;
}

/** A channel as a create body describes it, its defaults applied (what is stored, but for id, tenant and times). */
export type ChannelDraft = Pick<
  StoredChannel,
  'key' | 'name' | 'target' | 'send_resolved' | 'remind_every_seconds' | 'remind_max' | 'templates'
>;

/**
 * A create body (POST /api/channels, or a configuration document's item: one function for
 * both) checked in the API's order: its schema, its reminder interval, then
 * `channelFaults`. The channel it describes with the defaults of what it leaves out, or
 * its faults: the route answers the first, a document reports them all.
 */
export function channelOfCreate(
  body: unknown,
  rules: ChannelRules,
): { channel: ChannelDraft } | { faults: ChannelFault[] } {
  if (!rules.validators.channelCreate(body)) {
    return { faults: [{ code: 'VALIDATION_FAILED', problems: describeErrors(rules.validators.channelCreate.errors) }] };
  }
  const target = { type: body.type, config: body.config } as AnyChannelTarget;
  const templates = body.templates ?? CHANNEL_DEFAULTS.templates;
  const faults = channelFaults(target, templates, rules.channelValidators, rules.policy);
  const reminders = reminderProblems(body.remind_every_seconds, rules.minDelaySeconds);
  if (reminders.length > 0) {
    const config = faults[0]?.code === 'VALIDATION_FAILED' ? faults.shift()!.problems : [];
    faults.unshift({ code: 'VALIDATION_FAILED', problems: [...reminders, ...config] });
  }
  if (faults.length > 0) return { faults };
  return {
    channel: {
      key: body.key ?? null,
      name: body.name,
      target,
      send_resolved: body.send_resolved ?? CHANNEL_DEFAULTS.send_resolved,
      remind_every_seconds: body.remind_every_seconds ?? CHANNEL_DEFAULTS.remind_every_seconds,
      remind_max: body.remind_max ?? CHANNEL_DEFAULTS.remind_max,
      templates,
    },
  };
}

/** A channel's reminder interval: 0 (off) or at least ALERT_MIN_DELAY_SECONDS. */
export function reminderProblems(remindEverySeconds: number | undefined, minDelaySeconds: number): Problem[] {
  return remindEverySeconds !== undefined && remindEverySeconds !== 0 && remindEverySeconds < minDelaySeconds
    ? [
        {
          path: '/remind_every_seconds',
          message: `must be 0 (no reminders) or at least ${minDelaySeconds} (ALERT_MIN_DELAY_SECONDS)`,
        },
      ]
    : [];
}
