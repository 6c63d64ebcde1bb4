{{- define "quavon.labels" -}}
app.kubernetes.io/name: quavon
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "quavon.selector" -}}
app.kubernetes.io/name: quavon
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "quavon.fullname" -}}
{{ printf "%s-%s" .root.Release.Name .component | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "quavon.image" -}}
{{ printf "%s/%s:%s" .root.Values.image.repository .binary .root.Values.image.tag | quote }}
{{- end -}}

{{/* Every Quavon process: uid 65532, nothing writable but its tmpfs, no capabilities. */}}
{{- define "quavon.podSecurity" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "quavon.containerSecurity" -}}
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop: [ALL]
{{- end -}}

{{- define "quavon.coreEnv" -}}
- name: QUAVON_ENV
  value: {{ .Values.env | quote }}
- name: QUAVON_EDITION
  value: {{ .Values.edition | quote }}
{{- end -}}

{{- define "quavon.databaseURL" -}}
{{ printf "postgres://%s@%s:%v/%s?sslmode=%s" .user .root.Values.database.host .root.Values.database.port .root.Values.database.name .root.Values.database.sslmode | quote }}
{{- end -}}

{{/* A Secret mounted as files: 0440 with the pod's fsGroup, read-only. */}}
{{- define "quavon.secretVolume" -}}
- name: secrets
  secret:
    secretName: {{ .name }}
    defaultMode: 0440
    items:
{{- range .keys }}
      - {key: {{ . }}, path: {{ . }}}
{{- end }}
{{- end -}}

{{- define "quavon.tmpVolume" -}}
- name: tmp
  emptyDir:
    medium: Memory
    sizeLimit: 16Mi
{{- end -}}

{{/* A broker caller's client settings: the broker's Service and the credential file. */}}
{{- define "quavon.brokerClientEnv" -}}
- name: QUAVON_BROKER_ADDR
  value: {{ printf "%s:%v" (include "quavon.fullname" (dict "root" . "component" "token-broker")) .Values.broker.port | quote }}
- name: QUAVON_BROKER_CREDENTIAL_FILE
  value: /run/secrets/quavon/broker-credential
{{- end -}}

{{/* Egress to the broker's pods, for a broker caller's NetworkPolicy. */}}
{{- define "quavon.brokerEgress" -}}
- to:
    - podSelector:
        matchLabels: {{- include "quavon.selector" (dict "root" . "component" "token-broker") | nindent 10 }}
  ports: [{port: {{ .Values.broker.port }}, protocol: TCP}]
{{- end -}}
