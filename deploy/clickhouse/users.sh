#!/usr/bin/env bash
# One ClickHouse user per service, each with only what it needs (docs/operations.md,
# "ClickHouse users"), for current ClickHouse (SQL access management). The same split
# as libs/store/src/databases.ts (SERVICE_USERS), narrowed here to tables where SQL
# grants allow it.
#
# docker-compose runs it once, at the ClickHouse container's first start
# (/docker-entrypoint-initdb.d). Elsewhere (Kubernetes), run it once from any machine
# with clickhouse-client that reaches ClickHouse as an admin:
#   CLICKHOUSE_HOST=... CLICKHOUSE_USER=admin CLICKHOUSE_PASSWORD=... \
#   INGEST_PASSWORD=... CONSUMER_PASSWORD=... QUERY_PASSWORD=... REGISTRY_PASSWORD=... \
#   RUNNER_PASSWORD=... ANALYST_PASSWORD=... bash deploy/clickhouse/users.sh
# Re-running it sets the passwords again and adds missing grants.
set -euo pipefail

db=${CLICKHOUSE_DATABASE:-telemetry}
[[ $db =~ ^[A-Za-z_][A-Za-z0-9_]{0,54}$ ]] || { echo "CLICKHOUSE_DATABASE: not a plain identifier" >&2; exit 1; }
for v in INGEST_PASSWORD CONSUMER_PASSWORD QUERY_PASSWORD REGISTRY_PASSWORD RUNNER_PASSWORD ANALYST_PASSWORD; do
  [[ -n ${!v:-} ]] || { echo "$v is not set" >&2; exit 1; }
  [[ ${!v} != *"'"* && ${!v} != *'\'* ]] || { echo "$v: no quotes or backslashes, please" >&2; exit 1; }
done

clickhouse client --host "${CLICKHOUSE_HOST:-127.0.0.1}" --user "${CLICKHOUSE_USER:-default}" \
  --password "${CLICKHOUSE_PASSWORD:-}" --multiquery <<SQL
CREATE DATABASE IF NOT EXISTS ${db};
CREATE DATABASE IF NOT EXISTS ${db}_registry;
CREATE DATABASE IF NOT EXISTS ${db}_keys;

-- ingest gateway: authenticates telemetry keys; events go to Kafka, not ClickHouse.
CREATE USER OR REPLACE ingest IDENTIFIED WITH sha256_password BY '${INGEST_PASSWORD}' SETTINGS readonly = 2;
GRANT SELECT ON ${db}_keys.access_keys TO ingest;

-- stream consumer: inserts events, checks and alerts (and so the rollups their views
-- feed); drops partitions past their retention.
CREATE USER OR REPLACE consumer IDENTIFIED WITH sha256_password BY '${CONSUMER_PASSWORD}';
GRANT SELECT, INSERT, ALTER DROP PARTITION ON ${db}.* TO consumer;

-- query service: reads the data, the registry and the API keys; never writes.
CREATE USER OR REPLACE query IDENTIFIED WITH sha256_password BY '${QUERY_PASSWORD}' SETTINGS readonly = 2;
GRANT SELECT ON ${db}.* TO query;
GRANT SELECT ON ${db}_registry.monitors TO query;
GRANT SELECT ON ${db}_keys.access_keys TO query;

-- query service, REGISTRY_CLICKHOUSE_USER: writes monitors (and nothing else).
CREATE USER OR REPLACE registry IDENTIFIED WITH sha256_password BY '${REGISTRY_PASSWORD}';
GRANT SELECT, INSERT ON ${db}_registry.monitors TO registry;

-- check runner: reads the registry and the last alert of each monitor.
CREATE USER OR REPLACE runner IDENTIFIED WITH sha256_password BY '${RUNNER_PASSWORD}' SETTINGS readonly = 2;
GRANT SELECT ON ${db}_registry.monitors TO runner;
GRANT SELECT ON ${db}.alerts TO runner;

-- analysts and dashboards: the data tables (docs/clickhouse.md), never keys or monitors.
CREATE USER OR REPLACE analyst IDENTIFIED WITH sha256_password BY '${ANALYST_PASSWORD}' SETTINGS readonly = 2;
GRANT SELECT ON ${db}.* TO analyst;
SQL
echo "ClickHouse users ingest, consumer, query, registry, runner and analyst are set for ${db}"
