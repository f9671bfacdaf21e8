{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "limitlab.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels every object of the release carries. */}}
{{- define "limitlab.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: limitlab
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* The dashboard pod's labels: the sampler's NetworkPolicy admits it by them. */}}
{{- define "limitlab.serverSelector" -}}
app.kubernetes.io/name: limitlab-server
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* An image reference from {repository, tag, digest}: by digest when one is given. */}}
{{- define "limitlab.image" -}}
{{- $img := index . 0 -}}{{- $root := index . 1 -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default $root.Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* The Host names the dashboard answers to: localhost for a
port-forward, the Service's names, the ingress host, and any the values
add. */}}
{{- define "limitlab.allowHosts" -}}
{{- $name := include "limitlab.fullname" . -}}
{{- $hosts := list "localhost" "127.0.0.1" "::1" $name (printf "%s.%s" $name .Release.Namespace) (printf "%s.%s.svc" $name .Release.Namespace) -}}
{{- if .Values.ingress.enabled }}{{ $hosts = append $hosts .Values.ingress.host }}{{ end -}}
{{- join "," (concat $hosts .Values.server.allowHosts | uniq) -}}
{{- end -}}

{{/* The server's service account's user name, as the API server sees it. */}}
{{- define "limitlab.user" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ include "limitlab.fullname" . }}
{{- end -}}

{{/* The sampler's namespace, name and label: fixed, as the server looks for them. */}}
{{- define "limitlab.samplerNamespace" -}}limitlab-sampler{{- end -}}

{{/* The restricted container security context every pod of the chart meets. */}}
{{- define "limitlab.containerSecurity" -}}
privileged: false
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{- define "limitlab.podSecurity" -}}
runAsNonRoot: true
runAsUser: 65534
runAsGroup: 65534
fsGroup: 65534
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Refusals of values that would break the layout. */}}
{{- define "limitlab.check" -}}
{{- if eq .Values.lanes.namespace .Release.Namespace -}}
{{- fail (printf "lanes.namespace %q is the release's own namespace: the lanes need a namespace of their own, which the chart makes" .Values.lanes.namespace) -}}
{{- end -}}
{{- if eq .Values.lanes.namespace (include "limitlab.samplerNamespace" .) -}}
{{- fail "lanes.namespace: limitlab-sampler is the sampler's namespace" -}}
{{- end -}}
{{- end -}}
