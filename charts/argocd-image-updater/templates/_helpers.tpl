{{/* The chart name, overridable with nameOverride. */}}
{{- define "argocd-image-updater.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The name of the Deployment and its RBAC objects. */}}
{{- define "argocd-image-updater.fullname" -}}
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

{{/* The namespace of every namespaced object. */}}
{{- define "argocd-image-updater.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "argocd-image-updater.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "argocd-image-updater.selectorLabels" -}}
app.kubernetes.io/name: {{ include "argocd-image-updater.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "argocd-image-updater.labels" -}}
helm.sh/chart: {{ include "argocd-image-updater.chart" . }}
{{ include "argocd-image-updater.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: argocd-image-updater
{{- end }}

{{- define "argocd-image-updater.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "argocd-image-updater.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* ipFamilyPolicy / ipFamilies of a Service. */}}
{{- define "argocd-image-updater.dualStack" -}}
{{- with .Values.dualStack.ipFamilyPolicy }}
ipFamilyPolicy: {{ . }}
{{- end }}
{{- with .Values.dualStack.ipFamilies }}
ipFamilies:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
"true" when a value is given: not null, and not an empty string, list or map (false and 0 are
values). Called with (dict "v" value).
*/}}
{{- define "argocd-image-updater.isGiven" -}}
{{- $v := .v }}
{{- if not (kindIs "invalid" $v) }}
{{- if or (kindIs "bool" $v) (kindIs "float64" $v) (kindIs "int" $v) (kindIs "int64" $v) (not (empty $v)) -}}
true
{{- end }}
{{- end }}
{{- end }}

{{/* A value as ConfigMap text: whole numbers without an exponent. Called with (dict "v" value). */}}
{{- define "argocd-image-updater.text" -}}
{{- $v := .v }}
{{- if and (kindIs "float64" $v) (eq $v (floor $v)) }}
{{- printf "%d" (int64 $v) }}
{{- else }}
{{- toString $v }}
{{- end }}
{{- end }}

{{/*
One setting that has several spellings (this chart's, the original 0.x and 1.0.x charts'):
(dict "pairs" (list label value label value ...) "default" value ["agree" true]) renders
{"v": the given value, else the default} as JSON. Two spellings given at once stop the chart with
a message naming both; with "agree", they may be given together when their values are equal.
*/}}
{{- define "argocd-image-updater.pick" -}}
{{- $pairs := .pairs }}
{{- $labels := list }}
{{- $values := list }}
{{- range $i := until (len $pairs) }}
{{- if eq (mod $i 2) 0 }}
{{- $value := index $pairs (add1 $i) }}
{{- if include "argocd-image-updater.isGiven" (dict "v" $value) }}
{{- $labels = append $labels (index $pairs $i) }}
{{- $values = append $values $value }}
{{- end }}
{{- end }}
{{- end }}
{{- if gt (len $labels) 1 }}
{{- $texts := list }}
{{- range $values }}
{{- $texts = append $texts (include "argocd-image-updater.text" (dict "v" .)) }}
{{- end }}
{{- if or (not .agree) (gt (len (uniq $texts)) 1) }}
{{- fail (printf "%s are spellings of one setting (this chart's and the original chart's); give only one of them" (join " and " $labels)) }}
{{- end }}
{{- end }}
{{- if $values }}
{{- toJson (dict "v" (first $values)) }}
{{- else }}
{{- toJson (dict "v" .default) }}
{{- end }}
{{- end }}

{{/*
The settings ConfigMap's data, from this chart's values, the original 0.x chart's and the 1.0.x
chart's (the ConfigMap keys themselves under config, e.g. config."log.level"), as JSON.
*/}}
{{- define "argocd-image-updater.configData" -}}
{{- $c := .Values.config }}
{{- $a := $c.argocd }}
{{- $w := .Values.webhook }}
{{- $extra := $c.extra | default dict }}
{{- $ports := .Values.containerPorts | default dict }}
{{- $registries := "" }}
{{- with $c.registries }}
{{- $registries = printf "registries:\n%s\n" (toYaml . | indent 2) }}
{{- end }}
{{- $notifications := "" }}
{{- with $c.notifications }}
{{- $notifications = printf "%s\n" (toYaml .) }}
{{- end }}
{{- $rows := list
  (list "applications_api" "config.applicationsAPI" $c.applicationsAPI "config.applicationsAPIKind" $c.applicationsAPIKind)
  (list "argocd.grpc_web" "config.argocd.grpcWeb" $a.grpcWeb)
  (list "argocd.server_addr" "config.argocd.serverAddress" $a.serverAddress)
  (list "argocd.insecure" "config.argocd.insecure" $a.insecure)
  (list "argocd.plaintext" "config.argocd.plaintext" $a.plaintext)
  (list "argocd.namespace" "config.argocdNamespace" $c.argocdNamespace)
  (list "watch.namespaces" "config.watchNamespaces" $c.watchNamespaces)
  (list "interval" "config.interval" $c.interval)
  (list "max_concurrent_apps" "config.maxConcurrentApps" $c.maxConcurrentApps)
  (list "max_concurrent_reconciles" "config.maxConcurrentReconciles" $c.maxConcurrentReconciles)
  (list "legacy.annotations" "config.legacyAnnotations" $c.legacyAnnotations)
  (list "kube.events" "config.disableKubeEvents" $c.disableKubeEvents)
  (list "log.level" "config.logLevel" $c.logLevel)
  (list "log.format" "config.logFormat" $c.logFormat)
  (list "git.user" "config.gitCommitUser" $c.gitCommitUser)
  (list "git.email" "config.gitCommitMail" $c.gitCommitMail)
  (list "git.commit-message-template" "config.gitCommitTemplate" $c.gitCommitTemplate)
  (list "git.commit-signing-key" "config.gitCommitSigningKey" $c.gitCommitSigningKey)
  (list "git.commit-signing-method" "config.gitCommitSigningMethod" $c.gitCommitSigningMethod)
  (list "git.commit-sign-off" "config.gitCommitSignOff" $c.gitCommitSignOff)
  (list "git.commit-grouping" "config.gitCommitGrouping" $c.gitCommitGrouping)
  (list "cloud.credentials-auto" "config.cloudCredentialsAuto" $c.cloudCredentialsAuto)
  (list "webhook.enable" "webhook.enabled" $w.enabled)
  (list "webhook.require-secret" "webhook.requireSecret" $w.requireSecret)
  (list "webhook.ratelimit-allowed" "webhook.ratelimitAllowed" $w.ratelimitAllowed)
  (list "webhook.ratelimit-per-source" "webhook.ratelimitPerSource" $w.ratelimitPerSource)
  (list "disable-tls" "webhook.tls.disabled" $w.tls.disabled)
  (list "tls.min-version" "webhook.tls.minVersion" $w.tls.minVersion)
  (list "tls.max-version" "webhook.tls.maxVersion" $w.tls.maxVersion)
  (list "tls.ciphers" "webhook.tls.ciphers" $w.tls.ciphers)
  (list "registries.conf" "config.registries" $registries)
  (list "notifications.yaml" "config.notifications" $notifications)
}}
{{- $data := dict }}
{{- range $rows }}
{{- $key := first . }}
{{- $pairs := concat (rest .) (list (printf "config.extra.%q" $key) (index $extra $key)) }}
{{- if ne (index . 1) (printf "config.%s" $key) }}
{{- $pairs = concat $pairs (list (printf "config.%q" $key) (index $c $key)) }}
{{- end }}
{{- $picked := (include "argocd-image-updater.pick" (dict "pairs" $pairs "default" nil) | fromJson).v }}
{{- if include "argocd-image-updater.isGiven" (dict "v" $picked) }}
{{- $_ := set $data $key (include "argocd-image-updater.text" (dict "v" $picked)) }}
{{- end }}
{{- end }}
{{- $port := include "argocd-image-updater.pick" (dict "agree" true "default" 8082 "pairs" (list "webhook.port" $w.port "containerPorts.webhook" $ports.webhook (printf "config.%q" "webhook.port") (index $c "webhook.port") (printf "config.extra.%q" "webhook.port") (index $extra "webhook.port"))) | fromJson }}
{{- $_ := set $data "webhook.port" (include "argocd-image-updater.text" (dict "v" $port.v)) }}
{{- toJson $data }}
{{- end }}

{{/* Ports, RBAC scope and Service settings that have several spellings, as JSON. */}}
{{- define "argocd-image-updater.settings" -}}
{{- $v := .Values }}
{{- $ports := $v.containerPorts | default dict }}
{{- $service := $v.service | default dict }}
{{- $s := dict }}
{{- $_ := set $s "webhookPort" (int64 (index (include "argocd-image-updater.configData" . | fromJson) "webhook.port")) }}
{{- $_ = set $s "healthPort" (include "argocd-image-updater.pick" (dict "default" 8081 "pairs" (list "health.port" $v.health.port "containerPorts.health" $ports.health "containerPort" $v.containerPort)) | fromJson).v }}
{{- $_ = set $s "metricsPort" (include "argocd-image-updater.pick" (dict "default" 8443 "pairs" (list "metrics.port" $v.metrics.port "containerPorts.metrics" $ports.metrics)) | fromJson).v }}
{{- $_ = set $s "metricsServicePort" (include "argocd-image-updater.pick" (dict "default" 8443 "pairs" (list "metrics.service.port" $v.metrics.service.port "metrics.service.servicePort" $v.metrics.service.servicePort)) | fromJson).v }}
{{- $_ = set $s "serviceType" (include "argocd-image-updater.pick" (dict "default" "ClusterIP" "pairs" (list "webhook.service.type" $v.webhook.service.type "service.type" $service.type)) | fromJson).v }}
{{- $_ = set $s "servicePort" (include "argocd-image-updater.pick" (dict "default" 8080 "pairs" (list "webhook.service.port" $v.webhook.service.port "service.port" $service.port)) | fromJson).v }}
{{- $_ = set $s "serviceAnnotations" (include "argocd-image-updater.pick" (dict "default" dict "pairs" (list "webhook.service.annotations" $v.webhook.service.annotations "service.annotations" $service.annotations)) | fromJson).v }}
{{- $_ = set $s "rbacCreate" (include "argocd-image-updater.pick" (dict "default" true "pairs" (list "rbac.create" $v.rbac.create "rbac.enabled" $v.rbac.enabled)) | fromJson).v }}
{{- $_ = set $s "clusterWide" (include "argocd-image-updater.pick" (dict "default" true "pairs" (list "rbac.clusterWide" $v.rbac.clusterWide "createClusterRoles" $v.createClusterRoles)) | fromJson).v }}
{{- /* The original's createClusterRoles: false means no ClusterRole at all: no CRD reader either. */ -}}
{{- $_ = set $s "crdReader" (include "argocd-image-updater.pick" (dict "default" (ne (toString $v.createClusterRoles) "false") "pairs" (list "rbac.crdReader" $v.rbac.crdReader)) | fromJson).v }}
{{- /* auto: several replicas share the work (--sharding) and keep a disruption budget. */ -}}
{{- $several := gt (int $v.replicaCount) 1 }}
{{- $_ = set $s "sharding" (ternary $several (eq (toString $v.sharding.enabled) "true") (eq (toString $v.sharding.enabled) "auto")) }}
{{- $_ = set $s "pdb" (ternary $several (eq (toString $v.pdb.enabled) "true") (eq (toString $v.pdb.enabled) "auto")) }}
{{- toJson $s }}
{{- end }}

{{/* The controller's image; the original project's image cannot run this chart's commands. */}}
{{- define "argocd-image-updater.image" -}}
{{- $repository := .Values.image.repository | trimSuffix "/" }}
{{- if or (hasSuffix "argoprojlabs/argocd-image-updater" $repository) (hasSuffix "argoproj-labs/argocd-image-updater" $repository) }}
{{- fail (printf "image.repository: %s is the original project's (Go) image, which this chart cannot run; set image.repository (and image.tag) to this project's image, built with scripts/build-image, or leave image out of your values for the default (%s)" $repository "argocd-image-updater") }}
{{- end }}
{{- printf "%s:%s" $repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{- define "argocd-image-updater.defaultPodSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "argocd-image-updater.defaultSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 1000
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "argocd-image-updater.defaultResources" -}}
requests:
  cpu: 100m
  memory: 256Mi
limits:
  cpu: "1"
  memory: 512Mi
{{- end }}

{{/* What the controller does with Applications and ImageUpdaters (a Role's or ClusterRole's). */}}
{{- define "argocd-image-updater.workloadRules" -}}
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [argoproj.io]
  resources: [applications]
  verbs: [get, list, watch, patch, update]
- apiGroups: [argocd-image-updater.argoproj.io]
  resources: [imageupdaters]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [argocd-image-updater.argoproj.io]
  resources: [imageupdaters/status]
  verbs: [get, patch, update]
- apiGroups: [argocd-image-updater.argoproj.io]
  resources: [imageupdaters/finalizers]
  verbs: [update]
{{- end }}

{{- /* Reading the ImageUpdater CRD: the controller compares its schema with the fields it
supports. */ -}}
{{- define "argocd-image-updater.crdReaderRules" -}}
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  resourceNames: [imageupdaters.argocd-image-updater.argoproj.io]
  verbs: [get]
{{- end }}
