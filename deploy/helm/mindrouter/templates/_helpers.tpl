{{- define "mindrouter.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "mindrouter.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mindrouter.labels" -}}
app.kubernetes.io/name: {{ include "mindrouter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "mindrouter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mindrouter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end -}}

{{- define "mindrouter.image" -}}
{{- printf "%s:%s" .repository (default .appVersion .tag) -}}
{{- end -}}

{{/* The gateway's config: the chart's fixed keys over .Values.config. */}}
{{- define "mindrouter.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%d" (int .Values.service.port)) -}}
{{- $_ := set $cfg "data_dir" "/var/lib/mindrouter" -}}
{{- $_ := set $cfg "plugins" "/opt/mindrouter/plugins.yaml" -}}
{{- $metrics := default dict (get $cfg "metrics") -}}
{{- $_ := set $metrics "listen" (printf "0.0.0.0:%d" (int .Values.service.metricsPort)) -}}
{{- $_ := set $cfg "metrics" $metrics -}}
{{- $_ := set $cfg "store" (dict "driver" "mysql" "dsn" "${MINDROUTER_STORE_DSN}") -}}
{{- $redis := dict "addr" .Values.redis.addr -}}
{{- if .Values.secrets.redisPassword.name -}}
{{- $_ := set $redis "password" "${MINDROUTER_REDIS_PASSWORD}" -}}
{{- end -}}
{{- $_ := set $cfg "redis" $redis -}}
{{- $audit := default dict (get $cfg "audit") -}}
{{- if .Values.clickhouse.addr -}}
{{- $ch := dict "addr" .Values.clickhouse.addr "database" .Values.clickhouse.database "username" .Values.clickhouse.username -}}
{{- if .Values.secrets.clickhousePassword.name -}}
{{- $_ := set $ch "password" "${MINDROUTER_CLICKHOUSE_PASSWORD}" -}}
{{- end -}}
{{- $_ := set $audit "clickhouse" $ch -}}
{{- end -}}
{{- $_ := set $cfg "audit" $audit -}}
{{- toYaml $cfg -}}
{{- end -}}
