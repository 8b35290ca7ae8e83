/**
 * Bad-input cases: the alerting routes (docs/alerting.md, "API"): alert channels (bodies,
 * configs, templates, the egress policy), escalation policies, monitors naming them,
 * acknowledgement with a key and by link.
 */
import { AckLinks } from '@telemetry/alerting';
import { parseSealingKeys } from '@telemetry/platform';
import { RUN_SECRETS_KEYS } from '../../../harness/processes.js';
import { type Case, create, good, MARK, mon } from './case.js';

const MISSING_CHANNEL = 'chn_00000000000000000000';
const MISSING_POLICY = 'esc_00000000000000000000';
const secret = 'corpus-bad-secret-of-enough-length';
const hook = (config: object = {}, over: object = {}): Record<string, unknown> => ({
  type: 'webhook',
  name: `${MARK} channel`,
  config: { url: `https://${MARK}.example/hook`, secret, ...config },
  ...over,
});
const channel = (name: string, b: unknown, status: number, code?: string, headers?: Record<string, string>): Case =>
  mon(name, 'POST', '/api/channels', b, status, code, headers);
const policy = (name: string, b: unknown, status: number, code?: string): Case =>
  mon(name, 'POST', '/api/escalation-policies', b, status, code);
const step = (over: object = {}): object => ({ channels: [MISSING_CHANNEL], escalate_after_seconds: 600, ...over });

/** Link cases ask for JSON, so that the envelope's code is read (the pages say the same in HTML). */
const link = (name: string, method: string, token: string, status: number, code?: string): Case => ({
  name: `${method} /ack/{token}: ${name}`,
  service: 'query',
  method,
  path: `/ack/${token}`,
  headers: { accept: 'application/json' },
  expect: { status, code },
});

export const alertingCases = (): Case[] => {
  const links = (ttl: number) => new AckLinks(parseSealingKeys(RUN_SECRETS_KEYS), 'http://127.0.0.1', ttl);
  const claim = { tenant_id: 'ten_default', incident_id: 'corpus-missing-incident', recipient: 'email:a@example.com' };
  const expired = links(60).token(claim, Date.now() - 3_600_000);
  const genuine = links(3600).token(claim, Date.now());
  return [
    // --- channels: bodies
    channel('empty body', '', 400, 'INVALID_JSON'),
    channel('null', 'null', 400, 'VALIDATION_FAILED'),
    channel('an array', [hook()], 400, 'VALIDATION_FAILED'),
    channel('not JSON', 'type=webhook', 415, 'UNSUPPORTED_MEDIA_TYPE', { 'content-type': 'text/plain' }),
    channel('type unknown', hook({}, { type: 'carrier_pigeon' }), 400, 'VALIDATION_FAILED'),
    channel('type missing', { name: `${MARK} x`, config: {} }, 400, 'VALIDATION_FAILED'),
    channel('name empty', hook({}, { name: '' }), 400, 'VALIDATION_FAILED'),
    channel('name too long', hook({}, { name: 'x'.repeat(101) }), 400, 'VALIDATION_FAILED'),
    channel('name with a control character', hook({}, { name: 'a\u0007b' }), 400, 'VALIDATION_FAILED'),
    channel('unknown field', hook({}, { priority: 1 }), 400, 'VALIDATION_FAILED'),
    channel('config not an object', hook({}, { config: 'https://corpus-bad.example' }), 400, 'VALIDATION_FAILED'),
    channel('remind_every_seconds negative', hook({}, { remind_every_seconds: -1 }), 400, 'VALIDATION_FAILED'),
    channel('remind_every_seconds below the minimum', hook({}, { remind_every_seconds: 5 }), 400, 'VALIDATION_FAILED'),
    channel('remind_max 0', hook({}, { remind_max: 0 }), 400, 'VALIDATION_FAILED'),
    channel('send_resolved a string', hook({}, { send_resolved: 'yes' }), 400, 'VALIDATION_FAILED'),
    // --- channels: each type's config
    channel('webhook without its secret', hook({ secret: undefined }), 400, 'VALIDATION_FAILED'),
    channel('webhook url not a URL', hook({ url: 'not a url' }), 400, 'VALIDATION_FAILED'),
    channel('webhook url of another scheme', hook({ url: 'ftp://corpus-bad.example/' }), 400, 'VALIDATION_FAILED'),
    channel('config with an unknown field', hook({ token: 'x' }), 400, 'VALIDATION_FAILED'),
    channel('slack url a number', { type: 'slack', name: MARK, config: { url: 42 } }, 400, 'VALIDATION_FAILED'),
    channel('email without recipients', { type: 'email', name: MARK, config: { to: [] } }, 400, 'VALIDATION_FAILED'),
    channel(
      'email not an address',
      { type: 'email', name: MARK, config: { to: ['nobody'] } },
      400,
      'VALIDATION_FAILED',
    ),
    channel('telegram without a chat', { type: 'telegram', name: MARK, config: {} }, 400, 'VALIDATION_FAILED'),
    // --- channels: templates
    channel(
      'unknown template variable',
      hook({}, { templates: { title: '{{monitor.secret}}' } }),
      400,
      'INVALID_TEMPLATE',
    ),
    channel('template syntax error', hook({}, { templates: { text: '{{#alerts}} open' } }), 400, 'INVALID_TEMPLATE'),
    channel('template partial', hook({}, { templates: { text: '{{> header}}' } }), 400, 'INVALID_TEMPLATE'),
    channel(
      'template delimiters changed to hide a variable',
      hook({}, { templates: { text: '{{=<% %>=}}<% env %>' } }),
      400,
      'INVALID_TEMPLATE',
    ),
    channel(
      'body template with an unknown variable',
      hook({ body_template: '{"a":"{{process.env}}"}' }),
      400,
      'INVALID_TEMPLATE',
    ),
    channel('empty template', hook({}, { templates: { title: '' } }), 400, 'VALIDATION_FAILED'),
    // --- channels: the egress policy
    ...[
      'http://169.254.169.254/latest/meta-data/',
      'http://2852039166/',
      'http://0xa9.0xfe.0xa9.0xfe/',
      'http://[::ffff:10.0.0.1]/',
      'https://corpus-bad.example:25/',
    ].map((url) => channel(`target ${url}`, hook({ url }), 400, 'TARGET_NOT_ALLOWED')),
    channel(
      'ntfy server on a private address',
      { type: 'ntfy', name: MARK, config: { topic: 'corpus', server: 'http://192.168.1.1' } },
      400,
      'TARGET_NOT_ALLOWED',
    ),
    channel(
      'email through an SMTP server on a private address',
      {
        type: 'email',
        name: MARK,
        config: { to: ['a@example.com'], smtp: { url: 'smtp://10.0.0.1', from: 'a@example.com' } },
      },
      400,
      'TARGET_NOT_ALLOWED',
    ),
    // --- channels: keys, paths, parameters, methods
    channel('no key', hook(), 401, 'MISSING_CREDENTIALS', { authorization: '' }),
    channel('a key without monitors:write', hook(), 403, 'INSUFFICIENT_SCOPE', { authorization: 'Bearer @api' }),
    channel('a key limited to some monitors', hook(), 403, 'MONITOR_NOT_ALLOWED', {
      authorization: 'Bearer @restricted',
    }),
    mon('unknown parameter', 'GET', '/api/channels?type=slack', undefined, 400, 'INVALID_PARAMETER'),
    mon('unknown channel', 'GET', `/api/channels/${MISSING_CHANNEL}`, undefined, 404, 'CHANNEL_NOT_FOUND'),
    mon('malformed channel id', 'GET', '/api/channels/..%2F..%2Fmonitors', undefined, 404, 'CHANNEL_NOT_FOUND'),
    mon(
      'change an unknown channel',
      'PATCH',
      `/api/channels/${MISSING_CHANNEL}`,
      { name: 'x' },
      404,
      'CHANNEL_NOT_FOUND',
    ),
    mon(
      'change with a bad body',
      'PATCH',
      `/api/channels/${MISSING_CHANNEL}`,
      { type: 'slack' },
      400,
      'VALIDATION_FAILED',
    ),
    mon('delete an unknown channel', 'DELETE', `/api/channels/${MISSING_CHANNEL}`, undefined, 404, 'CHANNEL_NOT_FOUND'),
    mon(
      'test an unknown channel',
      'POST',
      `/api/channels/${MISSING_CHANNEL}/test`,
      undefined,
      404,
      'CHANNEL_NOT_FOUND',
    ),
    mon(
      'deliveries, limit 0',
      'GET',
      `/api/channels/${MISSING_CHANNEL}/deliveries?limit=0`,
      undefined,
      400,
      'INVALID_PARAMETER',
    ),
    mon(
      'deliveries, bad status',
      'GET',
      `/api/channels/${MISSING_CHANNEL}/deliveries?status=lost`,
      undefined,
      400,
      'INVALID_PARAMETER',
    ),
    mon(
      'deliveries, bad cursor',
      'GET',
      `/api/channels/${MISSING_CHANNEL}/deliveries?cursor=abc`,
      undefined,
      400,
      'INVALID_PARAMETER',
    ),
    mon(
      'deliveries of an unknown channel',
      'GET',
      `/api/channels/${MISSING_CHANNEL}/deliveries`,
      undefined,
      404,
      'CHANNEL_NOT_FOUND',
    ),
    mon('PUT', 'PUT', '/api/channels', hook(), 405, 'METHOD_NOT_ALLOWED'),
    mon('GET the test', 'GET', `/api/channels/${MISSING_CHANNEL}/test`, undefined, 405, 'METHOD_NOT_ALLOWED'),
    // --- escalation policies
    policy('no steps', { name: MARK, steps: [] }, 400, 'VALIDATION_FAILED'),
    policy('a step without channels', { name: MARK, steps: [{ channels: [] }] }, 400, 'VALIDATION_FAILED'),
    policy('a malformed channel id', { name: MARK, steps: [step({ channels: ['slack'] })] }, 400, 'VALIDATION_FAILED'),
    policy(
      'a delay below the minimum',
      { name: MARK, steps: [step({ escalate_after_seconds: 5 }), step()] },
      400,
      'VALIDATION_FAILED',
    ),
    policy('a delay of 0', { name: MARK, steps: [step({ escalate_after_seconds: 0 })] }, 400, 'VALIDATION_FAILED'),
    policy('eleven steps', { name: MARK, steps: Array.from({ length: 11 }, () => step()) }, 400, 'VALIDATION_FAILED'),
    policy('a channel the tenant does not have', { name: MARK, steps: [step()] }, 400, 'VALIDATION_FAILED'),
    mon(
      'unknown policy',
      'GET',
      `/api/escalation-policies/${MISSING_POLICY}`,
      undefined,
      404,
      'ESCALATION_POLICY_NOT_FOUND',
    ),
    mon(
      'delete an unknown policy',
      'DELETE',
      `/api/escalation-policies/${MISSING_POLICY}`,
      undefined,
      404,
      'ESCALATION_POLICY_NOT_FOUND',
    ),
    mon('POST to a policy', 'POST', `/api/escalation-policies/${MISSING_POLICY}`, {}, 405, 'METHOD_NOT_ALLOWED'),
    // --- monitors naming channels and policies
    create('a channel the tenant does not have', good({ channels: [MISSING_CHANNEL] }), 400, 'VALIDATION_FAILED'),
    create('a malformed channel id', good({ channels: ['slack'] }), 400, 'VALIDATION_FAILED'),
    create('a policy the tenant does not have', good({ escalation_policy: MISSING_POLICY }), 400, 'VALIDATION_FAILED'),
    create('silenced_until not a time', good({ silenced_until: 'tomorrow' }), 400, 'VALIDATION_FAILED'),
    create('silence_reason too long', good({ silence_reason: 'x'.repeat(501) }), 400, 'VALIDATION_FAILED'),
    // --- acknowledgement with a key
    mon('unknown incident', 'POST', '/api/incidents/corpus-missing/acknowledge', undefined, 404, 'INCIDENT_NOT_FOUND'),
    mon('malformed incident id', 'POST', '/api/incidents/a%20b/acknowledge', undefined, 404, 'INCIDENT_NOT_FOUND'),
    mon(
      'a body with fields',
      'POST',
      '/api/incidents/corpus-missing/acknowledge',
      { by: 'me' },
      400,
      'VALIDATION_FAILED',
    ),
    mon('a body not JSON', 'POST', '/api/incidents/corpus-missing/unacknowledge', 'yes', 400, 'INVALID_JSON'),
    mon('GET', 'GET', '/api/incidents/corpus-missing/acknowledge', undefined, 405, 'METHOD_NOT_ALLOWED'),
    mon(
      'a key without monitors:write',
      'POST',
      '/api/incidents/corpus-missing/acknowledge',
      undefined,
      403,
      'INSUFFICIENT_SCOPE',
      {
        authorization: 'Bearer @api',
      },
    ),
    // --- acknowledge links
    link('garbage', 'GET', 'garbage', 400, 'LINK_INVALID'),
    link('garbage', 'POST', 'garbage', 400, 'LINK_INVALID'),
    link('forged signature', 'POST', `${genuine.split('.')[0]!}.${'A'.repeat(43)}`, 400, 'LINK_INVALID'),
    link('expired', 'POST', expired, 400, 'LINK_INVALID'),
    link('an incident that does not exist', 'GET', genuine, 404, 'INCIDENT_NOT_FOUND'),
    link('an incident that does not exist', 'POST', genuine, 404, 'INCIDENT_NOT_FOUND'),
    link('DELETE', 'DELETE', genuine, 405, 'METHOD_NOT_ALLOWED'),
  ];
};
