import type { AnyChannelTarget, ChannelType, ChannelValidators, Problem } from '@telemetry/contract';
import { CHANNELS, templateProblems, type Templates } from '@telemetry/alerting';
import { AppError, connectUrl, type EgressPolicy } from '@telemetry/platform';
import { parsesAsUrl } from '@telemetry/contract';

/**
 * What a channel must be, past its JSON Schema, in the order problems are reported
 * (docs/alerting.md, "API"): its type's config (400 VALIDATION_FAILED at `/config/...`),
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
  const problems = configProblems(target.type, target.config, validators);
  if (problems.length > 0) {
    throw new AppError('VALIDATION_FAILED', `the channel is not valid: ${problems[0]!.path} ${problems[0]!.message}`, {
      problems,
    });
  }
  const bad = templatesOf(target, templates).flatMap((t) => templateProblems(t.template, t.path));
  if (bad.length > 0) {
    throw new AppError('INVALID_TEMPLATE', `${bad[0]!.path}: ${bad[0]!.message}`, { problems: bad });
  }
  const denied = deniedChannelTargets(target, policy);
  if (denied.length > 0) {
    throw new AppError('TARGET_NOT_ALLOWED', `${denied[0]!.path}: ${denied[0]!.message}`, {
      path: denied[0]!.path,
      problems: denied,
    });
  }
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
