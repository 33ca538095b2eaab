{{/*
Names. fullname is <release>-scrapy-cluster (or the release name when it
holds the chart's name); objects are <fullname>-<component>, cut to 63
characters.
*/}}
{{- define "scrapy-cluster.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "scrapy-cluster.fullname" -}}
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

{{/* scrapy-cluster.object: the name of an object, from (list $ "suffix"). */}}
{{- define "scrapy-cluster.object" -}}
{{- $root := index . 0 }}
{{- printf "%s-%s" (include "scrapy-cluster.fullname" $root) (index . 1) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "scrapy-cluster.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object; (dict "root" $ "component" "crawler" "extra" (dict ...)). */}}
{{- define "scrapy-cluster.labels" -}}
helm.sh/chart: {{ include "scrapy-cluster.chart" .root }}
{{ include "scrapy-cluster.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: scrapy-cluster
{{- end }}

{{- define "scrapy-cluster.selectorLabels" -}}
app.kubernetes.io/name: {{ include "scrapy-cluster.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- range $k, $v := .extra }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end }}

{{/*
scrapy-cluster.image: one of the images docker/ builds, (list $ "crawler"):
<registry>/<repository>:<component>-<tag>, as docker-compose.yml names them.
*/}}
{{- define "scrapy-cluster.image" -}}
{{- $root := index . 0 }}
{{- $img := $root.Values.image }}
{{- $repo := $img.repository }}
{{- if $img.registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" $img.registry) $repo }}{{ end }}
{{- printf "%s:%s-%s" $repo (index . 1) $img.tag }}
{{- end }}

{{/* The ServiceAccount the pods run as. */}}
{{- define "scrapy-cluster.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "scrapy-cluster.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The services, as the components reach them: the dev mode's in-cluster
Redis and Kafka, or the values' external ones.
*/}}
{{- define "scrapy-cluster.redisHost" -}}
{{- if .Values.dev.enabled }}{{ include "scrapy-cluster.object" (list . "redis") }}{{ else }}{{ .Values.redis.host }}{{ end }}
{{- end }}

{{- define "scrapy-cluster.redisPort" -}}
{{- if .Values.dev.enabled }}6379{{ else }}{{ .Values.redis.port }}{{ end }}
{{- end }}

{{- define "scrapy-cluster.kafkaHosts" -}}
{{- if .Values.dev.enabled }}{{ include "scrapy-cluster.object" (list . "kafka") }}:9092{{ else }}{{ .Values.kafka.hosts }}{{ end }}
{{- end }}

{{- define "scrapy-cluster.zookeeperHosts" -}}
{{- if not .Values.dev.enabled }}{{ .Values.zookeeper.hosts }}{{ end }}
{{- end }}

{{/*
The settings the chart sets itself, which the settings values may not
repeat.
*/}}
{{- define "scrapy-cluster.ownSettings" -}}
REDIS_HOST: {{ include "scrapy-cluster.redisHost" . | quote }}
REDIS_PORT: {{ include "scrapy-cluster.redisPort" . | quote }}
KAFKA_HOSTS: {{ include "scrapy-cluster.kafkaHosts" . | quote }}
ZOOKEEPER_HOSTS: {{ include "scrapy-cluster.zookeeperHosts" . | quote }}
{{- end }}

{{/*
scrapy-cluster.settingValue: a setting as the environment carries it. Maps
and lists become JSON, which the settings loader reads.
*/}}
{{- define "scrapy-cluster.settingValue" -}}
{{- if or (kindIs "map" .) (kindIs "slice" .) }}{{ toJson . }}
{{- else if and (kindIs "float64" .) (eq (floor .) .) }}{{ int64 . }}
{{- else }}{{ . }}{{ end }}
{{- end }}

{{/*
scrapy-cluster.port: the port a component serves /metrics, /healthz and
/readyz on, (list $ "crawler" $settings): ADMIN_ADDR's port (REST:
FLASK_PORT) from the component's settings, then the shared ones, then the
binary's default.
*/}}
{{- define "scrapy-cluster.port" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $own := index . 2 }}
{{- $defaults := dict "kafka-monitor" 9410 "redis-monitor" 9411 "crawler" 9412 "rest" 5343 }}
{{- $name := ternary "FLASK_PORT" "ADMIN_ADDR" (eq $component "rest") }}
{{- $value := "" }}
{{- if hasKey $root.Values.settings $name }}{{ $value = index $root.Values.settings $name | toString }}{{ end }}
{{- if hasKey $own $name }}{{ $value = index $own $name | toString }}{{ end }}
{{- if eq $value "" }}
{{- index $defaults $component }}
{{- else if eq $name "FLASK_PORT" }}
{{- $value }}
{{- else }}
{{- $port := regexReplaceAll "^.*:" $value "" }}
{{- if not (regexMatch "^[0-9]+$" $port) }}
{{- fail (printf "%s: %q has no port the probes can use (host:port, e.g. :9412)" $name $value) }}
{{- end }}
{{- if eq $port "0" }}
{{- fail (printf "%s: port 0 (any free port) cannot be probed; give %s a fixed port" $name $component) }}
{{- end }}
{{- $port }}
{{- end }}
{{- end }}

{{/* Security contexts: Pod Security Standard "restricted", root file system read-only. */}}
{{- define "scrapy-cluster.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .uid | default 65532 }}
runAsGroup: {{ .gid | default 65532 }}
fsGroup: {{ .gid | default 65532 }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "scrapy-cluster.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
{{- end }}

{{/*
scrapy-cluster.podCommon: what every pod spec of the chart has,
(dict "root" $ "component" "crawler" "extra" (dict ...) "hostname" "..."
"uid" 65532 "gid" 65532).
*/}}
{{- define "scrapy-cluster.podCommon" -}}
{{- $root := .root }}
{{- $pd := $root.Values.podDefaults -}}
serviceAccountName: {{ include "scrapy-cluster.serviceAccountName" $root }}
automountServiceAccountToken: false
# Kubernetes would otherwise put <SERVICE>_PORT=tcp://... variables of every
# Service in the namespace into the environment, where REDIS_PORT and
# KAFKA_PORT are settings (or broker properties).
enableServiceLinks: false
securityContext:
  {{- include "scrapy-cluster.podSecurityContext" . | nindent 2 }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if and $pd.stableHostnames .hostname }}
hostname: {{ .hostname | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- with $pd.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $pd.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $pd.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $pd.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $pd.topologySpread }}
topologySpreadConstraints:
{{- range $pd.topologySpread }}
  - topologyKey: {{ .topologyKey }}
    maxSkew: {{ .maxSkew }}
    whenUnsatisfiable: {{ .whenUnsatisfiable }}
    matchLabelKeys: ["pod-template-hash"]
    labelSelector:
      matchLabels:
        {{- include "scrapy-cluster.selectorLabels" $ | nindent 8 }}
{{- end }}
{{- end }}
{{- end }}

{{/* Annotations and labels every pod gets, (dict "root" $ ...) as podCommon. */}}
{{- define "scrapy-cluster.podMeta" -}}
labels:
  {{- include "scrapy-cluster.labels" . | nindent 2 }}
  {{- with .root.Values.podDefaults.labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  checksum/settings: {{ include (print .root.Template.BasePath "/settings.yaml") .root | sha256sum }}
  checksum/secrets: {{ include (print .root.Template.BasePath "/secret.yaml") .root | sha256sum }}
  {{- with .root.Values.podDefaults.annotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/*
scrapy-cluster.probes: startup, liveness and readiness on the admin
endpoint (scutils/admin): /healthz answers while the process serves,
/readyz when Redis, Kafka (and ZooKeeper) answer.
*/}}
{{- define "scrapy-cluster.probes" -}}
startupProbe:
  httpGet: {path: /healthz, port: {{ . }}}
  periodSeconds: 2
  failureThreshold: 30
livenessProbe:
  httpGet: {path: /healthz, port: {{ . }}}
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  # Each dependency is probed within 2 s, all at once.
  httpGet: {path: /readyz, port: {{ . }}}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
{{- end }}

{{/*
scrapy-cluster.component: the Deployment of one of our components,
(dict "root" $ "component" "crawler" "name" "crawler-link" "extra" labels
"replicas" n-or-nil "image" "..." "env" list "resources" map "grace" seconds
"preStopSleep" seconds "port" n "portName" "admin" "shm" size-or-"").
*/}}
{{- define "scrapy-cluster.component" -}}
{{- $root := .root }}
{{- $meta := dict "root" $root "component" .component "extra" (.extra | default dict) "hostname" (include "scrapy-cluster.object" (list $root .name)) -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "scrapy-cluster.object" (list $root .name) }}
  labels:
    {{- include "scrapy-cluster.labels" $meta | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" .replicas) }}
  replicas: {{ .replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "scrapy-cluster.selectorLabels" $meta | nindent 6 }}
  template:
    metadata:
      {{- include "scrapy-cluster.podMeta" $meta | nindent 6 }}
    spec:
      {{- include "scrapy-cluster.podCommon" $meta | nindent 6 }}
      terminationGracePeriodSeconds: {{ .grace }}
      containers:
        - name: {{ .component }}
          image: {{ .image }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          securityContext:
            {{- include "scrapy-cluster.containerSecurityContext" . | nindent 12 }}
          ports:
            - name: {{ .portName }}
              containerPort: {{ .port }}
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ include "scrapy-cluster.object" (list $root "settings") }}
          env:
            # The Go runtime collects garbage harder as the heap nears the
            # container's memory limit instead of being killed by it.
            - name: GOMEMLIMIT
              valueFrom:
                resourceFieldRef:
                  resource: limits.memory
            {{- with .env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- include "scrapy-cluster.probes" .portName | nindent 10 }}
          {{- if .preStopSleep }}
          lifecycle:
            preStop:
              sleep:
                seconds: {{ .preStopSleep }}
          {{- end }}
          resources:
            {{- toYaml .resources | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            # Log files, when LOG_STDOUT (SC_LOG_STDOUT) is false.
            - name: logs
              mountPath: /var/log/scrapy-cluster
            {{- if .shm }}
            - name: shm
              mountPath: /dev/shm
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 256Mi
        - name: logs
          emptyDir:
            sizeLimit: 1Gi
        {{- if .shm }}
        - name: shm
          emptyDir:
            medium: Memory
            sizeLimit: {{ .shm }}
        {{- end }}
{{- end }}

{{/* scrapy-cluster.env: a settings map as container env entries, sorted by name. */}}
{{- define "scrapy-cluster.env" -}}
{{- range $k := keys . | sortAlpha }}
- name: {{ $k }}
  value: {{ include "scrapy-cluster.settingValue" (index $ $k) | quote }}
{{- end }}
{{- end }}

{{/*
scrapy-cluster.shutdownGrace: SHUTDOWN_GRACE as a crawler reads it, from its
own settings, the shared ones, or the default (10 s), rounded up.
*/}}
{{- define "scrapy-cluster.shutdownGrace" -}}
{{- $root := index . 0 }}
{{- $own := index . 1 }}
{{- $grace := 10.0 }}
{{- if hasKey $root.Values.settings "SHUTDOWN_GRACE" }}{{ $grace = index $root.Values.settings "SHUTDOWN_GRACE" | float64 }}{{ end }}
{{- if hasKey $own "SHUTDOWN_GRACE" }}{{ $grace = index $own "SHUTDOWN_GRACE" | float64 }}{{ end }}
{{- ceil $grace | int }}
{{- end }}

{{/*
scrapy-cluster.crawlers: every crawler Deployment as a list of
(dict "key" "crawler-link" "spider" "link" "c" merged-values "render" bool),
the rendering pool last.
*/}}
{{- define "scrapy-cluster.crawlers" -}}
{{- $out := list }}
{{- range $spider := keys .Values.crawlers | sortAlpha }}
{{- $c := mergeOverwrite (deepCopy $.Values.crawlerDefaults) (index $.Values.crawlers $spider | default dict) }}
{{- if $c.enabled }}
{{- $out = append $out (dict "key" (printf "crawler-%s" $spider) "spider" $spider "c" $c "render" false) }}
{{- end }}
{{- end }}
{{- if .Values.renderPool.enabled }}
{{- $c := mergeOverwrite (deepCopy (omit .Values.crawlerDefaults "autoscaling")) (deepCopy .Values.renderPool) }}
{{- $out = append $out (dict "key" "crawler-render" "spider" .Values.renderPool.spider "c" $c "render" true) }}
{{- end }}
{{- toJson $out }}
{{- end }}
