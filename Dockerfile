# syntax=docker/dockerfile:1
# One image per service: docker build --build-arg SERVICE=ingest-gateway -t telemetry/ingest-gateway .
# SERVICE is one of ingest-gateway, stream-consumer, query-service, check-runner, provision.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY libs/contract/package.json libs/contract/
COPY libs/platform/package.json libs/platform/
COPY libs/store/package.json libs/store/
COPY libs/alerting/package.json libs/alerting/
COPY sdk/browser/package.json sdk/browser/
COPY services/ingest-gateway/package.json services/ingest-gateway/
COPY services/stream-consumer/package.json services/stream-consumer/
COPY services/query-service/package.json services/query-service/
COPY services/check-runner/package.json services/check-runner/
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json ./
COPY libs libs
COPY sdk sdk
COPY services services
RUN npx tsc -b services/ingest-gateway services/stream-consumer services/query-service services/query-service/console services/check-runner \
 && npx tsx sdk/browser/scripts/bundle.ts \
 && npx tsx services/query-service/console/scripts/bundle.ts

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json /app/.npmrc ./
COPY --from=build /app/libs/contract/package.json libs/contract/
COPY --from=build /app/libs/platform/package.json libs/platform/
COPY --from=build /app/libs/store/package.json libs/store/
COPY --from=build /app/libs/alerting/package.json libs/alerting/
COPY --from=build /app/sdk/browser/package.json sdk/browser/
COPY --from=build /app/services/ingest-gateway/package.json services/ingest-gateway/
COPY --from=build /app/services/stream-consumer/package.json services/stream-consumer/
COPY --from=build /app/services/query-service/package.json services/query-service/
COPY --from=build /app/services/check-runner/package.json services/check-runner/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE}
ARG SERVICE=ingest-gateway
# MALLOC_ARENA_MAX: at most 2 glibc malloc arenas (harness/processes.ts PRODUCTION_ENV, which
# the benchmarks use too): freed Kafka fetch buffers do not stay resident in one arena per thread.
# --max-semi-space-size=16: V8's young generation at 16 MB semi-spaces instead of up to 64 MB
# (the same drain rate for 73 MB less RSS in bench:consume).
ENV NODE_ENV=production SERVICE=${SERVICE} MALLOC_ARENA_MAX=2 NODE_OPTIONS=--max-semi-space-size=16
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/package.json ./
COPY --from=build /app/libs/contract/package.json libs/contract/
COPY --from=build /app/libs/contract/dist libs/contract/dist
COPY --from=build /app/libs/platform/package.json libs/platform/
COPY --from=build /app/libs/store/package.json libs/store/
COPY --from=build /app/libs/platform/dist libs/platform/dist
COPY --from=build /app/libs/store/dist libs/store/dist
COPY --from=build /app/libs/alerting/package.json libs/alerting/
COPY --from=build /app/libs/alerting/dist libs/alerting/dist
COPY --from=build /app/services/ingest-gateway/package.json services/ingest-gateway/
COPY --from=build /app/services/ingest-gateway/dist services/ingest-gateway/dist
# The browser SDK the gateway serves at /sdk/v1.js.
COPY --from=build /app/sdk/browser/package.json sdk/browser/
COPY --from=build /app/sdk/browser/dist/v1.js sdk/browser/dist/
COPY --from=build /app/services/stream-consumer/package.json services/stream-consumer/
COPY --from=build /app/services/stream-consumer/dist services/stream-consumer/dist
COPY --from=build /app/services/query-service/package.json services/query-service/
COPY --from=build /app/services/query-service/dist services/query-service/dist
COPY --from=build /app/services/query-service/console/static services/query-service/console/static
COPY --from=build /app/services/query-service/console/dist services/query-service/console/dist
COPY --from=build /app/services/check-runner/package.json services/check-runner/
COPY --from=build /app/services/check-runner/dist services/check-runner/dist
# icmp checks run the system ping (iputils: it opens an unprivileged ICMP socket where the
# pod's net.ipv4.ping_group_range allows the runner's group; docs/icmp.md, "Requirements").
RUN if [ "$SERVICE" = check-runner ]; then \
      apt-get update && apt-get install -y --no-install-recommends iputils-ping && rm -rf /var/lib/apt/lists/*; \
    fi
# Browser checks (docs/browser-checks.md): a check-runner image built with
# --build-arg WITH_CHROMIUM=1 carries Debian's Chromium (set RUNNER_CHROMIUM_PATH=/usr/bin/chromium).
ARG WITH_CHROMIUM=0
RUN if [ "$WITH_CHROMIUM" = 1 ]; then \
      apt-get update && apt-get install -y --no-install-recommends chromium fonts-liberation \
      && rm -rf /var/lib/apt/lists/*; \
    fi
USER node
# exec: node is PID 1 and receives SIGTERM itself (our handlers drain and exit).
# NOTE: kafkajs 2.2.4 schedules a harmless negative timeout; its warning is silenced.
# The query service also keeps its young generation at 16 MB from the start
# (--min-semi-space-size=16, tools/devstack/commands.ts SERVICE_NODE_FLAGS; node refuses it in
# NODE_OPTIONS): V8 otherwise shrinks it after an idle spell, and the next burst of reads stops
# for many small scavenges (bench:query).
CMD ["sh", "-c", "if [ \"$SERVICE\" = provision ]; then exec node --disable-warning=TimeoutNegativeWarning libs/store/dist/bin/provision.js; elif [ \"$SERVICE\" = query-service ]; then exec node --disable-warning=TimeoutNegativeWarning --min-semi-space-size=16 services/$SERVICE/dist/main.js; else exec node --disable-warning=TimeoutNegativeWarning services/$SERVICE/dist/main.js; fi"]
