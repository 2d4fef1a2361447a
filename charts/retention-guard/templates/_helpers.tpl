{{/* Name of every object. */}}
{{- define "retention-guard.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "retention-guard.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "retention-guard.labels" -}}
{{ include "retention-guard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "retention-guard.serviceName" -}}
{{ include "retention-guard.fullname" . }}-webhook
{{- end -}}

{{/* The Lease the replicas elect their leader with (see leader-election.yaml). */}}
{{- define "retention-guard.leaseName" -}}
{{ include "retention-guard.fullname" . }}-leader
{{- end -}}

{{- define "retention-guard.certSecretName" -}}
{{ include "retention-guard.fullname" . }}-webhook-cert
{{- end -}}

{{/*
Built-in certificate rotation: on unless cert-manager issues the certificate
or the installer brings their own (webhook.caBundle).
*/}}
{{- define "retention-guard.certRotation" -}}
{{- if not (or .Values.certManager.enabled .Values.webhook.caBundle) -}}true{{- end -}}
{{- end -}}

{{/* The manager's image: by digest when one is given, else by tag (the chart's appVersion unless set). */}}
{{- define "retention-guard.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The first document of a generated manifest copied into files/generated. */}}
{{- define "retention-guard.generated" -}}
{{- $raw := .context.Files.Get (printf "files/generated/%s" .file) -}}
{{- if not $raw -}}{{- fail (printf "files/generated/%s is missing: run make manifests" .file) -}}{{- end -}}
{{- $raw | trimPrefix "---\n" -}}
{{- end -}}

{{/* Directory the webhook server reads tls.crt and tls.key from. */}}
{{- define "retention-guard.certDir" -}}
/tmp/k8s-webhook-server/serving-certs
{{- end -}}

{{/*
argoRollouts is "true" when the webhook guards Argo Rollouts: argoRollouts.enabled
true, or auto (the default) and the cluster serves argoproj.io/v1alpha1
Rollouts (the CRD is installed). Empty otherwise.
*/}}
{{- define "retention-guard.argoRollouts" -}}
{{- $v := .Values.argoRollouts.enabled -}}
{{- if or (eq (toString $v) "true") (and (eq (toString $v) "auto") (.Capabilities.APIVersions.Has "argoproj.io/v1alpha1/Rollout")) -}}
true
{{- end -}}
{{- end -}}

{{/*
withoutArgoRollouts drops the argoproj.io entries of a generated rules list
(webhook rules, RBAC rules) unless the webhook guards Argo Rollouts. Call it
with (dict "context" $ "rules" LIST); it renders the kept list as YAML.
*/}}
{{- define "retention-guard.withoutArgoRollouts" -}}
{{- $keep := list -}}
{{- $argo := include "retention-guard.argoRollouts" .context -}}
{{- range .rules -}}
{{- if or $argo (not (has "argoproj.io" .apiGroups)) -}}
{{- $keep = append $keep . -}}
{{- end -}}
{{- end -}}
{{- toYaml $keep -}}
{{- end -}}

{{/*
A Prometheus duration (values.schema.json's prometheusDuration: 0, or
units ms, s, m, h, d, w, y concatenated) in seconds, for PromQL that
compares against it.
*/}}
{{- define "retention-guard.promSeconds" -}}
{{- $units := dict "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 "d" 86400.0 "w" 604800.0 "y" 31536000.0 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9]+(ms|s|m|h|d|w|y)" . -1 -}}
{{- $total = addf $total (mulf (regexFind "^[0-9]+" . | float64) (get $units (regexReplaceAll "^[0-9]+" . ""))) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/*
The manager's flags every Deployment passes alike (the webhook-serving one
and each shard's): Kafka, the Kubernetes client, allow lists, namespaces,
logs.
*/}}
{{- define "retention-guard.sharedArgs" -}}
- --kafka-request-timeout={{ .Values.kafkaRequestTimeout }}
- --live-checks-per-connection={{ .Values.liveChecksPerConnection }}
- --kube-api-qps={{ .Values.kubeAPI.qps }}
- --kube-api-burst={{ .Values.kubeAPI.burst }}
{{- if .Values.pprof.enabled }}
- --pprof-bind-address=127.0.0.1:8082
{{- end }}
{{- with .Values.allowedBootstrapServers }}
- --allowed-bootstrap-servers={{ join "," . }}
{{- end }}
{{- with .Values.allowedCursorHosts }}
- --allowed-cursor-hosts={{ join "," . }}
{{- end }}
{{- with .Values.watchNamespaces }}
- --watch-namespaces={{ join "," . }}
{{- end }}
- --zap-log-level={{ .Values.logLevel }}
- --zap-encoder={{ .Values.logEncoder }}
{{- end -}}

{{/* The shards' names, comma-separated (for a notin selector). */}}
{{- define "retention-guard.shardNames" -}}
{{- $names := list -}}
{{- range .Values.shards -}}{{- $names = append $names .name -}}{{- end -}}
{{- if ne (len $names) (len (uniq $names)) -}}{{- fail (printf "shards: each name once (%s)" (join "," $names)) -}}{{- end -}}
{{- join "," $names -}}
{{- end -}}

{{/* A shard's Deployment (and its leader election Lease's prefix). Call with (dict "context" $ "shard" NAME). */}}
{{- define "retention-guard.shardName" -}}
{{ include "retention-guard.fullname" .context }}-shard-{{ .shard }}
{{- end -}}

{{/*
A shard's pod labels. Its app.kubernetes.io/name differs from the
webhook-serving pods' so that neither the main Deployment, nor the webhook
Service, nor the PodDisruptionBudget select shard pods (they serve no
webhook). Call with (dict "context" $ "shard" NAME).
*/}}
{{- define "retention-guard.shardSelectorLabels" -}}
app.kubernetes.io/name: {{ .context.Chart.Name }}-shard
app.kubernetes.io/instance: {{ .context.Release.Name }}
retentionguard.io/shard: {{ .shard }}
{{- end -}}
