import type { ErrorCode } from './error-codes.js';

/** The response envelope of the interface (seed section 2.3). */
export interface SuccessEnvelope<T> {
  success: true;
  data: T;
}

export interface FailureEnvelope {
  success: false;
  error: string;
  code: ErrorCode;
  /** Machine-readable detail: which field, which limit, which events. Optional. */
  details?: unknown;
}

export type Envelope<T> = SuccessEnvelope<T> | FailureEnvelope;

export function ok<T>(data: T): SuccessEnvelope<T> {
  return { success: true, data };
}

export function fail(code: ErrorCode, error: string, details?: unknown): FailureEnvelope {
  return details === undefined ? { success: false, error, code } : { success: false, error, code, details };
}
