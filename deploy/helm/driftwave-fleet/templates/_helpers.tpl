{{- define "dwf.fullname" -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "dwf.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "dwf.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "dwf.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "api") */}}
{{- define "dwf.selectorLabels" -}}
app.kubernetes.io/name: driftwave-fleet
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "dwf.labels" -}}
{{ include "dwf.selectorLabels" . }}
app.kubernetes.io/part-of: driftwave
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ .root.Chart.Name }}-{{ .root.Chart.Version }}
{{- end -}}

{{/* The Secret and key holding a URL or secret: (dict "root" $ "v" .Values.database "key" "database-url" "name" NAME) */}}
{{- define "dwf.secretRef" -}}
{{- if .v.existingSecret -}}
name: {{ .v.existingSecret }}
key: {{ .v.existingSecretKey }}
{{- else -}}
name: {{ .name }}
key: {{ .key }}
{{- end -}}
{{- end -}}

{{/* The URLs carry passwords: a bad one is refused without printing it. */}}
{{- define "dwf.requireDatabase" -}}
{{- if not (or .Values.database.url .Values.database.existingSecret) -}}
{{- fail "database: set database.url or database.existingSecret (the fleet database's URL)" -}}
{{- end -}}
{{- if and .Values.database.url (not (regexMatch "^postgres(ql)?(\\+psycopg)?://[^\\s]+$" .Values.database.url)) -}}
{{- fail "database.url: not a PostgreSQL URL (rule: postgresql://USER:PASSWORD@HOST:PORT/DATABASE, no spaces; the value is not shown)" -}}
{{- end -}}
{{- end -}}

{{- define "dwf.requireBroker" -}}
{{- if not (or .Values.broker.url .Values.broker.existingSecret) -}}
{{- fail "broker: set broker.url or broker.existingSecret (the Redis broker's URL)" -}}
{{- end -}}
{{- if and .Values.broker.url (not (regexMatch "^rediss?://[^\\s]+$" .Values.broker.url)) -}}
{{- fail "broker.url: not a Redis URL (rule: redis://[:PASSWORD@]HOST:PORT/DB or rediss://..., no spaces; the value is not shown)" -}}
{{- end -}}
{{- end -}}

{{- define "dwf.oidcClientSecret" -}}
{{- or .Values.auth.oidc.clientSecret .Values.auth.oidc.existingSecret -}}
{{- end -}}

{{- define "dwf.agentCASecret" -}}
{{- if .Values.agentTLS.existingSecret -}}
{{- .Values.agentTLS.existingSecret -}}
{{- else if .Values.agentTLS.caBundles -}}
{{- include "dwf.fullname" . }}-agent-ca
{{- end -}}
{{- end -}}

{{/* The pod-level settings every fleet pod shares: its own ServiceAccount without a token,
non-root, RuntimeDefault seccomp. */}}
{{- define "dwf.podSecurity" -}}
automountServiceAccountToken: false
enableServiceLinks: false
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  fsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "dwf.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  runAsNonRoot: true
  capabilities:
    drop:
      - ALL
{{- end -}}

{{- define "dwf.settingsEnv" -}}
{{- range $name, $value := .Values.settings }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{/* Environment of the fleet's long-running processes: the database, the broker (when
"broker" is true) and the extra settings. */}}
{{- define "dwf.env" -}}
- name: DRIFTWAVE_DATABASE_URL
  valueFrom:
    secretKeyRef:
      {{- include "dwf.secretRef" (dict "v" .root.Values.database "key" "database-url" "name" (include "dwf.fullname" .root)) | nindent 6 }}
{{- if .broker }}
- name: DRIFTWAVE_BROKER_URL
  valueFrom:
    secretKeyRef:
      {{- include "dwf.secretRef" (dict "v" .root.Values.broker "key" "broker-url" "name" (include "dwf.fullname" .root)) | nindent 6 }}
{{- end }}
- name: HOME
  value: /tmp
{{- include "dwf.settingsEnv" .root }}
{{- end -}}

{{- define "dwf.checksums" -}}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
checksum/auth: {{ include (print .Template.BasePath "/configmap-auth.yaml") . | sha256sum }}
checksum/agent-ca: {{ include (print .Template.BasePath "/secret-agent-ca.yaml") . | sha256sum }}
{{- end -}}

{{/* Spread a component's replicas over zones (and nodes). */}}
{{- define "dwf.spread" -}}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "dwf.selectorLabels" . | nindent 8 }}
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "dwf.selectorLabels" . | nindent 8 }}
{{- end -}}

{{- define "dwf.placement" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Volumes of the agent TLS material, and their mounts (API and workers). */}}
{{- define "dwf.agentTLSVolumes" -}}
{{- with include "dwf.agentCASecret" . }}
- name: agent-ca
  secret:
    secretName: {{ . }}
{{- end }}
{{- with .Values.agentTLS.clientCertificateSecret }}
- name: agent-client
  secret:
    secretName: {{ . }}
{{- end }}
{{- end -}}

{{- define "dwf.agentTLSMounts" -}}
{{- if include "dwf.agentCASecret" . }}
- name: agent-ca
  mountPath: /etc/driftwave/agent-ca
  readOnly: true
{{- end }}
{{- if .Values.agentTLS.clientCertificateSecret }}
- name: agent-client
  mountPath: /etc/driftwave/agent-client
  readOnly: true
{{- end }}
{{- end -}}
