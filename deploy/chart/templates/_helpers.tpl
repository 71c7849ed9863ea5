{{/* Name of the chart, overridable. */}}
{{- define "gitops-broker.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Fully qualified app name: release-chart, or the release name when it already holds the chart's. */}}
{{- define "gitops-broker.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gitops-broker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gitops-broker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gitops-broker.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gitops-broker.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "gitops-broker.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gitops-broker.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The broker's configuration file: .Values.config, and with the Ingress on, http.trustedProxies set
to the ingress controller's addresses unless config.http.trustedProxies is given (ADR 0028): every
platform then reaches the broker from those addresses, one connection per request in flight, and
the broker bounds them by http.maxConnectionsPerProxy instead of maxConnectionsPerClient. Without
ingress.proxyAddresses, the private ranges, where pod networks are.
*/}}
{{- define "gitops-broker.configFile" -}}
{{- $config := deepCopy .Values.config -}}
{{- if .Values.ingress.enabled -}}
{{- $http := $config.http | default dict -}}
{{- if not (hasKey $http "trustedProxies") -}}
{{- $_ := set $http "trustedProxies" (.Values.ingress.proxyAddresses | default (list "10.0.0.0/8" "172.16.0.0/12" "192.168.0.0/16" "100.64.0.0/10" "fc00::/7")) -}}
{{- $_ := set $config "http" $http -}}
{{- end -}}
{{- end -}}
{{- toYaml $config }}
{{- if and .Values.tls.enabled .Values.tls.clientSubjects }}
tls:
  clientSubjects:
    {{- toYaml .Values.tls.clientSubjects | nindent 4 }}
{{- end }}
{{- end -}}
