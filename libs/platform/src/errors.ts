import { ERROR_CODES, type ErrorCode } from '@telemetry/contract';

/**
 * The one error base class. `expose` says whether `message` may be shown to a client;
 * unexpected errors are never exposed (the error middleware sends a generic message).
 * `status` is the code's own (ERROR_CODES) unless a protocol whose clients read another
 * status for the same meaning says otherwise (Segment's answer 400 to an over-size body).
 */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    readonly headers: Record<string, string> = {},
    readonly expose = true,
    status?: number,
  ) {
    super(message);
    this.name = new.target.name;
    Object.setPrototypeOf(this, new.target.prototype);
    this.status = status ?? ERROR_CODES[code].status;
  }
}

/** Kafka did not acknowledge in time (retriable: the client should retry). */
export class KafkaUnavailableError extends AppError {
  constructor(
    message = 'Kafka did not acknowledge the events in time; some or all may have been stored: retry the same request (copies of an event with an id share its event_id)',
  ) {
    super('KAFKA_UNAVAILABLE', message, undefined, { 'Retry-After': '1' });
  }
}

export class StoreUnavailableError extends AppError {
  constructor(message = 'the check store did not answer in time, retry') {
    super('STORE_UNAVAILABLE', message, undefined, { 'Retry-After': '1' });
  }
}

export class OverloadedError extends AppError {
  constructor(message = 'too much work in flight; nothing was accepted, retry') {
    super('OVERLOADED', message, undefined, { 'Retry-After': '1' });
  }
}

/** Kafka refused a message as too large for the broker (not retriable as it is). */
export class KafkaMessageTooLargeError extends AppError {
  constructor(message = "Kafka refused a message as larger than the broker's limit; nothing was accepted") {
    super('KAFKA_MESSAGE_TOO_LARGE', message, { limit: 'kafkaMaxMessageBytes' });
  }
}

/** Kafka refused the messages for a reason retrying does not fix. */
export class KafkaRejectedError extends AppError {
  constructor(message = 'Kafka refused the events; nothing was accepted; retrying does not help') {
    super('KAFKA_REJECTED', message);
  }
}
