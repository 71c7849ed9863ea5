{{- define "lib.greeting" -}}hello from lib to {{ .Chart.Name }}{{- end -}}
