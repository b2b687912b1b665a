{{- define "perfscope.selectorLabels" -}}
app.kubernetes.io/name: perfscope
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "perfscope.labels" -}}
{{ include "perfscope.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}
