import type { ChannelTarget, ChannelType, ConfigOf } from '@telemetry/contract';
import type { Channel } from './channel.js';
import { discordChannel } from './discord.js';
import { emailChannel } from './email.js';
import { googleChatChannel } from './google_chat.js';
import { mattermostChannel } from './mattermost.js';
import { ntfyChannel } from './ntfy.js';
import { opsgenieChannel } from './opsgenie.js';
import { pagerdutyChannel } from './pagerduty.js';
import { pushoverChannel } from './pushover.js';
import { slackChannel } from './slack.js';
import { teamsChannel } from './teams.js';
import { telegramChannel } from './telegram.js';
import { webhookChannel } from './webhook.js';

export type { Answer, Channel, ChannelContext, ChannelHttp, RenderContext, Verdict } from './channel.js';
export { signature } from './webhook.js';
export { classifyHttp, retriable, retryAfterMs, sendHttp, RESPONSE_BYTES, type HttpRequest } from './http-send.js';

/** One channel per type: a type of CHANNEL_TYPES without its channel here does not compile. */
export type ChannelRegistry = { readonly [T in ChannelType]: Channel<ConfigOf<T>> };

/** The alert channels (a new one: its module, and one line here). */
export const CHANNELS: ChannelRegistry = {
  webhook: webhookChannel,
  email: emailChannel,
  slack: slackChannel,
  teams: teamsChannel,
  discord: discordChannel,
  google_chat: googleChatChannel,
  mattermost: mattermostChannel,
  telegram: telegramChannel,
  ntfy: ntfyChannel,
  pushover: pushoverChannel,
  pagerduty: pagerdutyChannel,
  opsgenie: opsgenieChannel,
};

/** The channel of a target, typed by the target's type (so its config fits). */
export function channelFor<T extends ChannelType>(
  channels: ChannelRegistry,
  target: ChannelTarget<T>,
): Channel<ConfigOf<T>> {
  return channels[target.type];
}
