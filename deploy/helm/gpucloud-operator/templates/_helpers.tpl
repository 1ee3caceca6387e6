{{/* The chart name, or nameOverride. */}}
{{- define "gpucloud-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The name of every object: fullnameOverride, else <release>-<chart> unless the release already says it. */}}
{{- define "gpucloud-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gpucloud-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpucloud-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gpucloud-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gpucloud-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: gpucloud-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Metadata shared by every object of the chart: name, labels and the Argo CD sync wave. */}}
{{- define "gpucloud-operator.metadata" -}}
labels:
  {{- include "gpucloud-operator.labels" . | nindent 2 }}
annotations:
  argocd.argoproj.io/sync-wave: {{ .Values.argocd.syncWave | quote }}
{{- end }}

{{- define "gpucloud-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpucloud-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret with the API key (and, as configured, the API URL and the callback token). */}}
{{- define "gpucloud-operator.credentialsSecretName" -}}
{{- default (printf "%s-credentials" (include "gpucloud-operator.fullname" .)) .Values.apiKey.existingSecret }}
{{- end }}

{{- define "gpucloud-operator.leaseName" -}}
{{- default (include "gpucloud-operator.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{- define "gpucloud-operator.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.leaseNamespace }}
{{- end }}

{{- define "gpucloud-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Settings that contradict each other fail the render with a message that says what to change. */}}
{{- define "gpucloud-operator.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount > 1 needs leaderElection.enabled=true: replicas without a leader would all create cloud resources" }}
{{- end }}
{{- if and .Values.apiKey.value .Values.apiKey.existingSecret }}
{{- fail "set apiKey.value (the chart creates the Secret) or apiKey.existingSecret (you do), not both" }}
{{- end }}
{{- if and .Values.apiKey.value (not .Values.apiUrl) }}
{{- fail "apiUrl is required when the chart creates the API key Secret (apiKey.value)" }}
{{- end }}
{{- if .Values.callbacks.enabled }}
{{- if not .Values.callbacks.baseUrl }}
{{- fail "callbacks.enabled needs callbacks.baseUrl: the URL at which the cloud reaches the callback Service" }}
{{- end }}
{{- if and .Values.apiKey.value (not .Values.callbacks.token) }}
{{- fail "callbacks.enabled with apiKey.value needs callbacks.token (the chart writes both into its Secret)" }}
{{- end }}
{{- end }}
{{- if and .Values.callbacks.token (not .Values.apiKey.value) }}
{{- fail "callbacks.token is only used with apiKey.value; put the token in your existing Secret under callbacks.tokenSecretKey" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled: the ServiceMonitor scrapes that Service" }}
{{- end }}
{{- if and .Values.tenantApi.enabled .Values.tenantApi.certManager.enabled (not .Values.tenantApi.certManager.issuerRef.name) }}
{{- fail "tenantApi.certManager.enabled needs tenantApi.certManager.issuerRef.name: the Issuer that signs the serving certificate" }}
{{- end }}
{{- if and .Values.tenantApi.enabled (has (int .Values.tenantApi.port) (list (int .Values.healthPort) (int .Values.callbacks.port))) }}
{{- fail "tenantApi.port must differ from healthPort and callbacks.port" }}
{{- end }}
{{- if and (eq (int .Values.healthPort) (int .Values.callbacks.port)) .Values.callbacks.enabled }}
{{- fail "callbacks.port must differ from healthPort" }}
{{- end }}
{{- if and .Values.virtualNode.tlsSecret (not .Values.virtualNode.enabled) }}
{{- fail "virtualNode.tlsSecret serves the virtual nodes' kubelet API: set virtualNode.enabled=true too, or leave it empty" }}
{{- end }}
{{- end }}
