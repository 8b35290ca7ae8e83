import { expect } from 'chai';
import { rowToCheck } from '@telemetry/store';

describe('query service rows (unit)', () => {
  it('turns a ClickHouse row into the seed’s check, without float noise', () => {
    expect(
      rowToCheck({
        id: 'chk_1',
        monitor_id: 'mon_1',
        status: 'down',
        response_time: 1.3599999999999999,
        status_code: 0,
        error: 'connection_refused',
        location: 'eu-west',
        tls_days_left: '12',
        detail: 'assertion $.status == "ok" failed: saw "degraded"',
        timings: '{"steps":[{"name":"sign in","duration_ms":12.5,"ok":true,"status_code":200}]}',
        screenshot: '1',
        ts: '1795326543',
      }),
    ).to.deep.equal({
      id: 'chk_1',
      monitor_id: 'mon_1',
      status: 'down',
      response_time: 1.36,
      status_code: 0,
      error: 'connection_refused',
      location: 'eu-west',
      tls_days_left: 12,
      detail: 'assertion $.status == "ok" failed: saw "degraded"',
      timings: { steps: [{ name: 'sign in', duration_ms: 12.5, ok: true, status_code: 200 }] },
      screenshot: '/api/monitors/mon_1/checks/chk_1/screenshot',
      created_at: '2026-11-22T05:49:03Z',
    });
    expect(
      rowToCheck({
        id: 'c',
        monitor_id: 'm',
        status: 'up',
        response_time: 5012.5,
        status_code: 200,
        error: '',
        location: '',
        tls_days_left: null,
        detail: '',
        timings: '',
        screenshot: 0,
        ts: 0,
      }),
    ).to.include({
      response_time: 5012.5,
      error: null,
      location: null,
      tls_days_left: null,
      detail: null,
      timings: null,
      screenshot: null,
      created_at: '1970-01-01T00:00:00Z',
    });
  });
});
