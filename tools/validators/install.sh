#!/usr/bin/env bash
# Installs the real validators the deploy tests use, each only when missing:
#   helm (Go module)                 lints and renders the chart deploy/helm/telemetry
#   kubernetes-validate (PyPI)       validates the result against the Kubernetes schemas
#   promtool (Debian: prometheus)    checks deploy/prometheus/alerts.yaml
#   docker-compose (Debian)          checks docker-compose.yml (`config`, no engine needed)
#   schemathesis (PyPI)              fuzzes the services against docs/openapi.json
set -euo pipefail
bin="${DEVSTACK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/telemetry-pipeline}/bin"
mkdir -p "$bin"
# Go may be installed without being on PATH (our machines: /usr/local/go/bin).
command -v go >/dev/null 2>&1 || { [ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"; }
# NOTE: built from source it takes minutes once; a `go install` build reports Kubernetes
# v1.20 as its default version, so the tests pass --kube-version.
if [ ! -x "$bin/helm" ]; then
  GOBIN="$bin" GOFLAGS=-mod=mod go install helm.sh/helm/v3/cmd/helm@v3.22.0 >/dev/null 2>&1
fi
if ! command -v kubernetes-validate >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check kubernetes-validate==1.34.0 >/dev/null 2>&1
fi
if ! command -v schemathesis >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check schemathesis==4.32.5 >/dev/null 2>&1
fi
apt_missing=()
command -v promtool >/dev/null 2>&1 || apt_missing+=(prometheus)
command -v docker-compose >/dev/null 2>&1 || apt_missing+=(docker-compose)
if [ ${#apt_missing[@]} -gt 0 ]; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_missing[@]}" >/dev/null
fi
echo "$bin"
