{{- define "sub.name" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}
{{- define "oracle.shared" -}}defined by {{ .Chart.Name }}{{- end -}}
