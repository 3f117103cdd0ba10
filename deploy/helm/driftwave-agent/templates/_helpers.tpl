{{- define "driftwave-agent.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "driftwave-agent.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default "driftwave-agent" -}}
{{- end -}}

{{- define "driftwave-agent.selectorLabels" -}}
app.kubernetes.io/name: driftwave-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "driftwave-agent.labels" -}}
{{ include "driftwave-agent.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: Helm
{{- end -}}
