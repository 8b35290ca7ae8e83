/**
 * The whole bad-input corpus, route by route, in the order the runner sends it
 * (test/e2e/bad-input.int.test.ts). A new route's cases go in a file of their own here.
 */
import { alertingCases } from './alerting.js';
import type { Case } from './case.js';
import { checkCases } from './checks.js';
import { configCases } from './config.js';
import { deletionCases } from './deletions.js';
import { eventCases } from './events.js';
import { eventSchemaCases } from './event-schemas.js';
import { gatewayRouteCases } from './gateway-routes.js';
import { heartbeatCases } from './heartbeats.js';
import { memberCases } from './members.js';
import { monitorAuthCases } from './monitors-auth.js';
import { monitorBodyCases } from './monitors-bodies.js';
import { monitorCheckCases } from './monitor-checks.js';
import { monitorParamCases } from './monitors-params.js';
import { monitorPathCases } from './monitors-paths.js';
import { peopleCases } from './people.js';
import { pixelCases } from './pixel.js';
import { statusFollowCases, type FollowEnv } from './status-follow.js';

export * from './case.js';
export { CORPUS_PEOPLE, peopleFixtures } from './people.js';
export * from './status-follow.js';

/** Every case (built on call: some bodies are megabytes). */
export function corpus(follow: FollowEnv): Case[] {
  return [
    ...eventCases(),
    ...heartbeatCases(),
    ...pixelCases(),
    ...gatewayRouteCases(),
    ...checkCases(),
    ...monitorAuthCases(),
    ...monitorBodyCases(),
    ...monitorCheckCases(),
    ...monitorParamCases(),
    ...monitorPathCases(),
    ...alertingCases(),
    ...eventSchemaCases(),
    ...deletionCases(),
    ...configCases(),
    ...peopleCases(),
    ...memberCases(),
    ...statusFollowCases(follow),
  ];
}
