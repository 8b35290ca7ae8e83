-- A ClickHouse user that can only read: the query service's (docker-compose).
CREATE USER IF NOT EXISTS reader IDENTIFIED WITH plaintext_password BY 'reader' SETTINGS readonly = 2;
CREATE DATABASE IF NOT EXISTS telemetry;
GRANT SELECT ON telemetry.* TO reader;
