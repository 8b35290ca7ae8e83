/**
 * What browser code (the console) may import of alert channels: the types, each type's
 * config schema and secrets, the channel and escalation-policy schemas and the template
 * variables. Nothing here pulls in the validators (ajv).
 */
export { CHANNEL_CONFIG_SCHEMAS, CHANNEL_SECRETS, CHANNEL_TYPES, type ChannelType } from './channels/catalog.js';
export {
  channelCreateSchema,
  escalationPolicyCreateSchema,
  NOTIFICATION_KINDS,
  TEMPLATE_VARIABLES,
} from './alerting-schemas.js';
export { ALERTING_LIMITS } from './limits.js';
