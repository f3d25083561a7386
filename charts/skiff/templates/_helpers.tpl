{{/*
The helpers of the templates hack/chartgen generates from manifests/. This file is written by
hand; the generated templates call these by name.
*/}}

{{/*
The name of skiff's objects: the release name when it contains "skiff" (install the release
as `skiff` for the names the manifests use), else <release>-skiff; fullnameOverride wins.
Truncated so that the longest derived name, <fullname>-metrics (a Service), stays a DNS label.
*/}}
{{- define "skiff.fullname" -}}
{{- $name := .Values.fullnameOverride -}}
{{- if not $name -}}
{{- $name = ternary .Release.Name (printf "%s-%s" .Release.Name .Chart.Name) (contains .Chart.Name .Release.Name) -}}
{{- end -}}
{{- $name | trunc 55 | trimSuffix "-" -}}
{{- end -}}

{{/* Helm's labels and commonLabels, on every object besides the manifests' own. */}}
{{- define "skiff.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* metadata.annotations from commonAnnotations; nothing when there are none. */}}
{{- define "skiff.annotations" -}}
{{- with .Values.commonAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
The CRD's annotations: with crd.keep, Helm leaves the CRD (and every Mirror) in place on
uninstall, since the Deployment is gone by then and nothing would remove the Mirrors'
skiff.dev/cleanup finalizers.
*/}}
{{- define "skiff.crdAnnotations" -}}
{{- if or .Values.crd.keep .Values.commonAnnotations }}
annotations:
  {{- if .Values.crd.keep }}
  helm.sh/resource-policy: keep
  {{- end }}
  {{- with .Values.commonAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* repository:tag, with @digest pinned after it when set; the tag defaults to appVersion. */}}
{{- define "skiff.image" -}}
{{- .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- with .Values.image.digest }}@{{ . }}{{ end }}
{{- end -}}

{{/* Where metrics.certSecret is mounted, for --metrics-cert-dir. */}}
{{- define "skiff.metricsCertDir" -}}
/etc/skiff/metrics-certs
{{- end -}}

{{/*
The flags the values set, after the manifest's own args. A flag whose value is unset is left
out, so skiff's own default applies (and the default values render the manifests' args); a
switch is true or false, rendered bare when true, as the kustomize components add it. The
Deployment always includes this, so combinations of values that cannot work fail here.
*/}}
{{- define "skiff.args" -}}
{{- if and (has "*" .Values.sourceNamespaces) .Values.secretTargetNames }}
{{- fail "sourceNamespaces [\"*\"] with secretTargetNames would let skiff read every Secret in the cluster; list the source namespaces instead" }}
{{- end }}
{{- if and .Values.prometheus.enable (not (and .Values.metrics.enable .Values.metrics.secure)) }}
{{- fail "prometheus.enable needs metrics.enable and metrics.secure: the ServiceMonitor scrapes /metrics over HTTPS with Prometheus's token" }}
{{- end }}
{{- if ne (has "rolebindings.rbac.authorization.k8s.io" .Values.kinds) (not (empty .Values.bindableRoles)) }}
{{- fail "kinds with rolebindings.rbac.authorization.k8s.io and bindableRoles go together: name the ClusterRoles skiff may bind, or neither" }}
{{- end }}
{{- if .Values.selfService.enable }}
{{- range .Values.selfService.kinds }}
{{- include "skiff.requireCopied" (dict "value" "selfService.kinds" "entry" . "kind" . "root" $) }}
{{- end }}
{{- range .Values.selfService.projections }}
{{- include "skiff.requireCopied" (dict "value" "selfService.projections" "entry" . "kind" (first (splitList "-as-" .)) "root" $) }}
{{- end }}
{{- end }}
{{- if .Values.fleet.member.enable }}
{{- $_ := required "fleet.member.hubName is required with fleet.member.enable: the hub's name, which every copy from it carries in the label skiff.dev/hub; e.g. --set fleet.member.hubName=hub-eu" .Values.fleet.member.hubName }}
{{- range .Values.fleet.member.hubKinds }}
{{- include "skiff.requireCopied" (dict "value" "fleet.member.hubKinds" "entry" . "kind" . "root" $) }}
{{- end }}
{{- end }}
{{- $flags := list
  (list "leader-election-id" (ternary "" .Values.leaderElection.id (eq .Values.leaderElection.id "skiff-leader")))
  (list "leader-elect-lease-duration" .Values.leaderElection.leaseDuration)
  (list "leader-elect-renew-deadline" .Values.leaderElection.renewDeadline)
  (list "leader-elect-retry-period" .Values.leaderElection.retryPeriod)
  (list "leader-elect-qps" .Values.leaderElection.qps)
  (list "leader-elect-burst" .Values.leaderElection.burst)
  (list "kube-api-qps" .Values.kubeAPI.qps)
  (list "kube-api-burst" .Values.kubeAPI.burst)
  (list "source-namespaces" (join "," .Values.sourceNamespaces))
  (list "secret-target-names" (join "," .Values.secretTargetNames))
  (list "self-service" .Values.selfService.enable)
  (list "offer-namespace-selector" (ternary .Values.selfService.offerNamespaceSelector "" .Values.selfService.enable))
  (list "max-copies-per-tenant-mirror" (ternary .Values.selfService.maxCopiesPerTenantMirror "" .Values.selfService.enable))
  (list "self-service-kinds" (ternary (join "," .Values.selfService.kinds) "" (and .Values.selfService.enable (ne (join "," .Values.selfService.kinds) "configmaps"))))
  (list "self-service-projections" (ternary (join "," .Values.selfService.projections) "" .Values.selfService.enable))
  (list "self-service-orphan" (and .Values.selfService.enable .Values.selfService.orphan))
  (list "kinds" (join "," .Values.kinds))
  (list "bindable-roles" (join "," .Values.bindableRoles))
  (list "binding-namespace-label" (ternary .Values.bindingNamespaceLabel "" (not (empty .Values.kinds))))
  (list "fleet-hub" .Values.fleet.hub.enable)
  (list "member-silence-after" (ternary .Values.fleet.hub.memberSilenceAfter "" .Values.fleet.hub.enable))
  (list "fleet-qps" (ternary .Values.fleet.hub.qps "" .Values.fleet.hub.enable))
  (list "fleet-burst" (ternary .Values.fleet.hub.burst "" .Values.fleet.hub.enable))
  (list "hub-kubeconfig" (ternary (printf "%s/kubeconfig" (include "skiff.hubDir" .)) "" .Values.fleet.member.enable))
  (list "hub-name" (ternary .Values.fleet.member.hubName "" .Values.fleet.member.enable))
  (list "hub-kinds" (ternary (join "," .Values.fleet.member.hubKinds) "" (and .Values.fleet.member.enable (ne (join "," .Values.fleet.member.hubKinds) "configmaps"))))
  (list "hub-heartbeat-period" (ternary .Values.fleet.member.heartbeatPeriod "" .Values.fleet.member.enable))
  (list "metrics-secure" (ternary "false" "" (and .Values.metrics.enable (not .Values.metrics.secure))))
  (list "metrics-cert-dir" (ternary (include "skiff.metricsCertDir" .) "" (and .Values.metrics.enable (ne .Values.metrics.certSecret ""))))
}}
{{- range $flags }}
{{- $value := index . 1 }}
{{- if kindIs "bool" $value }}
{{- if $value }}
- {{ printf "--%s" (index . 0) | quote }}
{{- end }}
{{- else if or (kindIs "float64" $value) (kindIs "int64" $value) (and (kindIs "string" $value) (ne $value "")) }}
- {{ printf "--%s=%v" (index . 0) $value | quote }}
{{- end }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/*
Fails unless skiff copies .kind (a --kinds name, or configmaps or secrets) at all, which the
value .value names as .entry: Secrets only under secretTargetNames, a kit kind only in kinds.
*/}}
{{- define "skiff.requireCopied" -}}
{{- $values := .root.Values }}
{{- if and (eq .kind "secrets") (empty $values.secretTargetNames) }}
{{- fail (printf "%s names %s, which needs secretTargetNames: skiff reads and writes Secrets only under those names" .value .entry) }}
{{- end }}
{{- if and (ne .kind "secrets") (ne .kind "configmaps") (not (has .kind $values.kinds)) }}
{{- fail (printf "%s names %s, which kinds does not enable: add %s to kinds (with its RBAC) or drop it" .value .entry .kind) }}
{{- end }}
{{- end -}}

{{/*
Where fleet.member.hubSecret is mounted, for --hub-kubeconfig: as a directory, never with
subPath, so that a rotated token reaches skiff (a subPath mount is never updated).
*/}}
{{- define "skiff.hubDir" -}}
/etc/skiff/hub
{{- end -}}

{{/* The metrics certificate's volume, with metrics.certSecret; the hub's Secret on a member. */}}
{{- define "skiff.volumes" -}}
{{- $metricsCerts := and .Values.metrics.enable .Values.metrics.certSecret }}
{{- if or $metricsCerts .Values.fleet.member.enable }}
volumes:
{{- if $metricsCerts }}
  - name: metrics-certs
    secret:
      secretName: {{ .Values.metrics.certSecret }}
{{- end }}
{{- if .Values.fleet.member.enable }}
  - name: hub
    secret:
      secretName: {{ .Values.fleet.member.hubSecret }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "skiff.volumeMounts" -}}
{{- $metricsCerts := and .Values.metrics.enable .Values.metrics.certSecret }}
{{- if or $metricsCerts .Values.fleet.member.enable }}
volumeMounts:
{{- if $metricsCerts }}
  - name: metrics-certs
    mountPath: {{ include "skiff.metricsCertDir" . }}
    readOnly: true
{{- end }}
{{- if .Values.fleet.member.enable }}
  - name: hub
    mountPath: {{ include "skiff.hubDir" . }}
    readOnly: true
{{- end }}
{{- end }}
{{- end -}}
