import type { CheckStatus } from './limits.js';

export interface TelemetryEvent {
  source: string;
  category: string;
  payload: Record<string, unknown>;
  id?: string;
  timestamp?: string;
}

export interface IngestRequest {
  events: TelemetryEvent[];
  sent_at?: string;
}

export interface EventMessage {
  v: 1;
  event_id: string;
  key_id: string;
  source: string;
  category: string;
  payload: Record<string, unknown>;
  client_event_id?: string;
  client_ts?: string;
  sent_at?: string;
  received_at: string;
}

export interface CheckMessage {
  id: string;
  monitor_id: string;
  status: CheckStatus;
  response_time: number;
  status_code: number;
  created_at: string;
}

/** Seed 2.2; `created_at` is `YYYY-MM-DDThh:mm:ssZ`. */
export type Check = CheckMessage;
