{{/* Names: <fullname>-<tier>; fullname is the release name when it already says "telemetry". */}}
{{- define "telemetry.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "telemetry.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "telemetry.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The labels of every resource. */}}
{{- define "telemetry.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: telemetry-pipeline
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* A tier's selector: its name (ingest-gateway, …, telemetry-provision) and the release. */}}
{{- define "telemetry.selector" -}}
app.kubernetes.io/name: {{ .tier }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{/* A tier's labels: {root, tier}. */}}
{{- define "telemetry.tierLabels" -}}
{{ include "telemetry.labels" .root }}
app.kubernetes.io/name: {{ .tier }}
app.kubernetes.io/component: {{ .tier }}
{{- end -}}

{{/* The image of a tier: {root, values} (the tier's `image` overrides the global one). */}}
{{- define "telemetry.image" -}}
{{- $img := mergeOverwrite (deepCopy .root.Values.image) (.values.image | default dict) -}}
{{- printf "%s:%s" $img.repository (toString (default .root.Chart.AppVersion $img.tag)) -}}
{{- end -}}

{{- define "telemetry.pullPolicy" -}}
{{- $img := mergeOverwrite (deepCopy .root.Values.image) (.values.image | default dict) -}}
{{- $img.pullPolicy | default "IfNotPresent" -}}
{{- end -}}

{{/* The shared settings: the ConfigMap's data, and the provisioning hook's env (it runs before the ConfigMap exists). */}}
{{- define "telemetry.configData" -}}
{{- $v := .Values -}}
{{- $t := $v.kafka.topics -}}
{{- $hosts := $v.config.operatorHosts -}}
{{- if not $hosts -}}
{{- $q := printf "%s-query-service" (include "telemetry.fullname" .) -}}
{{- $hosts = printf "%s,%s.%s.svc,%s.%s.svc.cluster.local" $q $q .Release.Namespace $q .Release.Namespace -}}
{{- end -}}
{{- $data := dict
  "KAFKA_BROKERS" $v.kafka.brokers
  "TOPIC_PARTITIONS" (toString (int $v.kafka.topicPartitions))
  "EVENTS_TOPIC" $t.events
  "CHECKS_TOPIC" $t.checks
  "ALERTS_TOPIC" $t.alerts
  "WEBHOOK_DELIVERIES_TOPIC" $t.webhookDeliveries
  "AUDIT_TOPIC" $t.audit
  "MONITOR_CHANGES_TOPIC" $t.monitorChanges
  "SCREENSHOTS_TOPIC" $t.screenshots
  "RUN_REQUESTS_TOPIC" $t.runRequests
  "RUN_REPLIES_TOPIC" $t.runReplies
  "DEAD_LETTER_TOPIC" $t.deadLetter
  "CONSUMER_GROUP_ID" $v.kafka.consumerGroup
  "CLICKHOUSE_URL" $v.clickhouse.url
  "CLICKHOUSE_DATABASE" $v.clickhouse.database
  "MIGRATE_ON_START" "false"
  "LOG_LEVEL" $v.config.logLevel
  "PUBLIC_URL" $v.config.publicUrl
  "OPERATOR_HOSTS" $hosts
-}}
{{- if $v.clickhouse.cluster -}}
{{- $_ := set $data "CLICKHOUSE_CLUSTER" $v.clickhouse.cluster -}}
{{- end -}}
{{- if $v.oidc.issuer -}}
{{- $_ := set $data "OIDC_ISSUER" $v.oidc.issuer -}}
{{- $_ := set $data "OIDC_CLIENT_ID" $v.oidc.clientId -}}
{{- with $v.oidc.displayName }}{{ $_ := set $data "OIDC_DISPLAY_NAME" . }}{{ end -}}
{{- end -}}
{{- range $k, $x := $v.config.extra -}}
{{- $_ := set $data $k (toString $x) -}}
{{- end -}}
{{- toYaml $data -}}
{{- end -}}

{{/* Plain env entries from a map: {NAME: value}. */}}
{{- define "telemetry.envMap" -}}
{{- range $k, $x := . }}
- name: {{ $k }}
  value: {{ toString $x | quote }}
{{- end }}
{{- end -}}

{{/* A variable from a Secret: {name, ref: {existingSecret, key…}, key: the field naming the key, what}. */}}
{{- define "telemetry.secretEnv" -}}
{{- $secret := required (printf "%s: existingSecret is required (the Secret holding %s)" .what .what) .ref.existingSecret -}}
{{- $key := required (printf "%s: %s is required" .what .key) (get .ref .key) -}}
- name: {{ .name }}
  valueFrom: { secretKeyRef: { name: {{ $secret | quote }}, key: {{ $key | quote }} } }
{{- end -}}

{{/* A ClickHouse user: {root, cred: the credentials' name, prefix: "" | "AUDIT_" | "REGISTRY_"}. */}}
{{- define "telemetry.clickhouseEnv" -}}
{{- $ref := get .root.Values.clickhouse.credentials .cred -}}
{{- $what := printf "clickhouse.credentials.%s" .cred -}}
{{ include "telemetry.secretEnv" (dict "name" (printf "%sCLICKHOUSE_USER" .prefix) "ref" $ref "key" "userKey" "what" $what) }}
{{ include "telemetry.secretEnv" (dict "name" (printf "%sCLICKHOUSE_PASSWORD" .prefix) "ref" $ref "key" "passwordKey" "what" $what) }}
{{- end -}}

{{/* DATABASE_URL of a role: {root, cred}. With usernameKey, one built from the user and
password of its Secret (Kubernetes expands $(VAR) of variables defined before it);
otherwise the whole URL at urlKey. */}}
{{- define "telemetry.postgresEnv" -}}
{{- $pg := .root.Values.postgresql -}}
{{- $ref := get $pg.credentials .cred -}}
{{- $what := printf "postgresql.credentials.%s" .cred -}}
{{- if $ref.usernameKey -}}
{{ include "telemetry.secretEnv" (dict "name" "DATABASE_URL_USER" "ref" $ref "key" "usernameKey" "what" $what) }}
{{ include "telemetry.secretEnv" (dict "name" "DATABASE_URL_PASSWORD" "ref" $ref "key" "passwordKey" "what" $what) }}
- name: DATABASE_URL
  value: {{ printf "postgres://$(DATABASE_URL_USER):$(DATABASE_URL_PASSWORD)@%s:%d/%s%s" (required "postgresql.host is required" $pg.host) (int $pg.port) (required "postgresql.database is required" $pg.database) (ternary (printf "?%s" $pg.params) "" (ne (toString $pg.params) "")) | quote }}
{{- else -}}
{{ include "telemetry.secretEnv" (dict "name" "DATABASE_URL" "ref" $ref "key" "urlKey" "what" $what) }}
{{- end -}}
{{- end -}}

{{/* SECRETS_KEYS, HEARTBEAT_KEY, SMTP_URL, OIDC_CLIENT_SECRET. */}}
{{- define "telemetry.secretsKeysEnv" -}}
{{ include "telemetry.secretEnv" (dict "name" "SECRETS_KEYS" "ref" .Values.secretsKeys "key" "key" "what" "secretsKeys") }}
{{- end -}}
{{- define "telemetry.heartbeatKeyEnv" -}}
{{ include "telemetry.secretEnv" (dict "name" "HEARTBEAT_KEY" "ref" .Values.heartbeatKey "key" "key" "what" "heartbeatKey") }}
{{- end -}}
{{- define "telemetry.smtpEnv" -}}
{{- if .Values.smtp.existingSecret }}
{{ include "telemetry.secretEnv" (dict "name" "SMTP_URL" "ref" .Values.smtp "key" "key" "what" "smtp") }}
{{- end }}
{{- end -}}

{{/* Pod-level settings shared by the Deployments: {root, values}. */}}
{{- define "telemetry.podScheduling" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with .values.topologySpreadConstraints }}
topologySpreadConstraints: {{ toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Whether an operator's resources are rendered: a value true/false, or "auto" (the cluster serves the API). */}}
{{- define "telemetry.enabled" -}}
{{- $v := .value -}}
{{- if kindIs "bool" $v -}}
{{- if $v }}true{{ end -}}
{{- else if eq (toString $v) "auto" -}}
{{- if .root.Capabilities.APIVersions.Has .api }}true{{ end -}}
{{- else if eq (toString $v) "true" -}}
true
{{- end -}}
{{- end -}}

{{/* The checksum of the shared config, so pods roll when it changes. */}}
{{- define "telemetry.configChecksum" -}}
checksum/config: {{ include "telemetry.configData" . | sha256sum }}
{{- end -}}

{{/* Refuse replicas beyond the partitions: such a consumer or runner owns nothing. */}}
{{- define "telemetry.checkPartitions" -}}
{{- $p := int .Values.kafka.topicPartitions -}}
{{- if lt $p 1 }}{{ fail "kafka.topicPartitions must be at least 1" }}{{ end -}}
{{- if gt (int .Values.checkRunner.replicas) $p -}}
{{- fail (printf "checkRunner.replicas (%d) must be at most kafka.topicPartitions (%d): a runner beyond the partitions of monitor.changes owns no monitors" (int .Values.checkRunner.replicas) $p) -}}
{{- end -}}
{{- if gt (int .Values.streamConsumer.replicas) $p -}}
{{- fail (printf "streamConsumer.replicas (%d) must be at most kafka.topicPartitions (%d): a consumer beyond the partitions sits idle" (int .Values.streamConsumer.replicas) $p) -}}
{{- end -}}
{{- with .Values.streamConsumer.autoscaling.keda.maxReplicaCount -}}
{{- if gt (int .) $p -}}
{{- fail (printf "streamConsumer.autoscaling.keda.maxReplicaCount (%d) must be at most kafka.topicPartitions (%d)" (int .) $p) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A tier's Deployment: {root, values, tier, port, env (rendered entries), autoscaled,
readiness {periodSeconds, failureThreshold}, liveness, strategy, podSecurityContext (extra)}. */}}
{{- define "telemetry.deployment" -}}
{{- $root := .root -}}
{{- $v := .values -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "telemetry.fullname" $root }}-{{ .tier }}
  labels: {{- include "telemetry.tierLabels" (dict "root" $root "tier" .tier) | nindent 4 }}
spec:
  {{- if not .autoscaled }}
  replicas: {{ int $v.replicas }}
  {{- end }}
  selector:
    matchLabels: {{- include "telemetry.selector" (dict "root" $root "tier" .tier) | nindent 6 }}
  {{- with .strategy }}
  strategy: {{- toYaml . | nindent 4 }}
  {{- end }}
  template:
    metadata:
      labels:
        {{- include "telemetry.tierLabels" (dict "root" $root "tier" .tier) | nindent 8 }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        {{- include "telemetry.configChecksum" $root | nindent 8 }}
        prometheus.io/scrape: 'true'
        prometheus.io/port: {{ .port | quote }}
        prometheus.io/path: /metrics
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: {{ int $v.terminationGracePeriodSeconds }}
      securityContext:
        {{- toYaml (mergeOverwrite (deepCopy $root.Values.podSecurityContext) (.podSecurityContext | default dict)) | nindent 8 }}
      {{- with include "telemetry.podScheduling" (dict "root" $root "values" $v) }}
      {{- . | nindent 6 }}
      {{- end }}
      containers:
        - name: {{ .tier }}
          image: {{ include "telemetry.image" (dict "root" $root "values" $v) | quote }}
          imagePullPolicy: {{ include "telemetry.pullPolicy" (dict "root" $root "values" $v) }}
          ports:
            - { name: http, containerPort: {{ .port }} }
          env:
            - { name: SERVICE, value: {{ .tier }} }
            - { name: PORT, value: {{ .port | quote }} }
            {{- .env | nindent 12 }}
            {{- with $v.env }}
            {{- include "telemetry.envMap" . | nindent 12 }}
            {{- end }}
          envFrom:
            - configMapRef: { name: {{ include "telemetry.fullname" $root }}-config }
          readinessProbe:
            httpGet: { path: /readyz, port: http }
            {{- toYaml .readiness | nindent 12 }}
          livenessProbe:
            httpGet: { path: /healthz, port: http }
            {{- toYaml .liveness | nindent 12 }}
          resources: {{- toYaml $v.resources | nindent 12 }}
          securityContext: {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
{{- end -}}

{{/* A tier's Service: {root, tier, port (the Service's), type}. */}}
{{- define "telemetry.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "telemetry.fullname" .root }}-{{ .tier }}
  labels: {{- include "telemetry.tierLabels" (dict "root" .root "tier" .tier) | nindent 4 }}
spec:
  type: {{ .type | default "ClusterIP" }}
  selector: {{- include "telemetry.selector" (dict "root" .root "tier" .tier) | nindent 4 }}
  ports:
    - { name: http, port: {{ int .port }}, targetPort: http }
{{- end -}}

{{/* A tier's PodDisruptionBudget: {root, tier, budget ({minAvailable} or {maxUnavailable}; empty: none)}. */}}
{{- define "telemetry.pdb" -}}
{{- if .budget }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "telemetry.fullname" .root }}-{{ .tier }}
  labels: {{- include "telemetry.tierLabels" (dict "root" .root "tier" .tier) | nindent 4 }}
spec:
  {{- toYaml .budget | nindent 2 }}
  selector:
    matchLabels: {{- include "telemetry.selector" (dict "root" .root "tier" .tier) | nindent 6 }}
{{- end }}
{{- end -}}

{{/* A CPU HorizontalPodAutoscaler: {root, tier, autoscaling}. */}}
{{- define "telemetry.hpa" -}}
{{- $a := .autoscaling -}}
{{- if $a.enabled }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "telemetry.fullname" .root }}-{{ .tier }}
  labels: {{- include "telemetry.tierLabels" (dict "root" .root "tier" .tier) | nindent 4 }}
spec:
  scaleTargetRef: { apiVersion: apps/v1, kind: Deployment, name: {{ include "telemetry.fullname" .root }}-{{ .tier }} }
  minReplicas: {{ int $a.minReplicas }}
  maxReplicas: {{ int $a.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target: { type: Utilization, averageUtilization: {{ int $a.targetCPUUtilizationPercentage }} }
  {{- with $a.behavior }}
  behavior: {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* Pods of these tiers of this release: {root, tiers}. */}}
{{- define "telemetry.tiersSelector" -}}
matchLabels: { app.kubernetes.io/instance: {{ .root.Release.Name }} }
matchExpressions:
  - key: app.kubernetes.io/name
    operator: In
    values: {{ toJson .tiers }}
{{- end -}}
