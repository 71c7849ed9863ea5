{{- define "cache.fullname" -}}
{{ .Release.Name }}-{{ .Chart.Name }}
{{- end -}}
{{- define "webapp.image" -}}
the parent chart's definition wins
{{- end -}}
