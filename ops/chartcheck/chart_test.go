package chartcheck_test

import (
	"bytes"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/scrapycluster/scrapy-cluster-go/ops/chartcheck"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// The oldest Kubernetes the chart supports (Chart.yaml's kubeVersion) and
// the newest the API types know.
var kubeVersions = []string{"v1.30.0", "v1.37.0"}

func TestHelmLintStrictPasses(t *testing.T) {
	for _, v := range variants(t) {
		for _, kube := range kubeVersions {
			failures, err := chartcheck.Lint(chartDir(t), v.vals, kube)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range failures {
				t.Errorf("helm lint --strict, %s, Kubernetes %s: %s", v.name, kube, f)
			}
		}
	}
}

// Each variant renders, every object decodes strictly into its API type,
// every pod is "restricted", runs an image docker/ builds as its user,
// probes where its binary serves, and everything the objects refer to is
// there.
func TestEveryRenderingPassesEveryCheck(t *testing.T) {
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			for _, p := range problems(t, chartDir(t), v.vals) {
				t.Error(p)
			}
		})
	}
}

// The variants between them render every kind the chart can make, the
// helm test among them.
func TestTheVariantsRenderEveryKind(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range variants(t) {
		r, err := render(chartDir(t), v.vals)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		for _, m := range r.manifests {
			seen[m.Kind] = true
			if m.Kind == "Pod" && m.Hook != "test" {
				t.Errorf("%s: a Pod that is not the helm test", m.Where())
			}
		}
	}
	for _, kind := range []string{"ConfigMap", "Secret", "Service", "ServiceAccount", "Pod", "Deployment", "PodDisruptionBudget",
		"NetworkPolicy", "Ingress", "ServiceMonitor", "PrometheusRule", "ScaledObject"} {
		if !seen[kind] {
			t.Errorf("no variant renders a %s", kind)
		}
	}
}

// files/ holds copies of monitoring/'s alerts and dashboard (Helm reads
// only files inside the chart): they must stay the same.
func TestTheChartsAlertsAndDashboardAreMonitoringsOwn(t *testing.T) {
	for copyName, original := range map[string]string{
		"files/alerts.yml":          "monitoring/prometheus/alerts.yml",
		"files/scrapy-cluster.json": "monitoring/grafana/dashboards/scrapy-cluster.json",
	} {
		a, err := os.ReadFile(filepath.Join(chartDir(t), copyName))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(harness.Root(t), original))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("charts/scrapy-cluster/%s differs from %s: cp %s charts/scrapy-cluster/%s", copyName, original, original, copyName)
		}
	}
}

// badValues are values that values.schema.json must refuse at install.
var badValues = []struct {
	name string
	yaml string
}{
	{"an unknown top-level key", "imag: {tag: x}"},
	{"an unknown key in a section", "image: {tags: x}"},
	{"a misspelt crawler key", "crawlers: {link: {replica: 3}}"},
	{"a misspelt crawler default", "crawlerDefaults: {drainSecond: 3}"},
	{"a port as a string", "redis: {port: '6379x'}"},
	{"a port out of range", "redis: {port: 70000}"},
	{"replicas as a string", "kafkaMonitor: {replicas: two}"},
	{"replicas below zero", "rest: {replicas: -1}"},
	{"a boolean as a string", "dev: {enabled: 'yes'}"},
	{"a tag as a number", "image: {tag: 13}"},
	{"a setting in lower case", "settings: {log_level: DEBUG}"},
	{"a null setting", "settings: {QUEUE_HITS: null}"},
	{"a spider name with a colon", "crawlers: {'link:x': {}}"},
	{"an unknown pull policy", "image: {pullPolicy: Sometimes}"},
	{"a memory quantity that is not one", "rest: {resources: {requests: {cpu: 100m, memory: lots}, limits: {memory: 1Gi}}}"},
	{"a misspelt resources key", "rest: {resources: {request: {cpu: 100m}}}"},
	{"a NetworkPolicy peer with an unknown key", "networkPolicy: {kafka: {to: [{podSelektor: {}}]}}"},
	{"a test URL that is not one", "tests: {url: example.com}"},
	{"a Prometheus address that is not a URL", "autoscaling: {prometheus: {serverAddress: prometheus:9090}}"},
}

// checkSchema renders the chart in dir with each of badValues and returns
// an error for each the schema let through.
func checkSchema(t *testing.T, dir string) []error {
	t.Helper()
	var errs []error
	for _, bv := range badValues {
		vals := readValuesString(t, bv.yaml)
		_, err := chartcheck.Render(dir, vals, chartcheck.DefaultRelease)
		if err == nil || !strings.Contains(err.Error(), "schema") {
			errs = append(errs, &schemaHole{bv.name, bv.yaml, err})
		}
	}
	return errs
}

type schemaHole struct {
	name, yaml string
	err        error
}

func (h *schemaHole) Error() string {
	return "values.schema.json lets " + h.name + " through (" + h.yaml + "): " + errString(h.err)
}

func errString(err error) string {
	if err == nil {
		return "it renders"
	}
	return err.Error()
}

func readValuesString(t *testing.T, s string) map[string]any {
	t.Helper()
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	vals, err := chartcheck.ReadValues(f)
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

func TestTheSchemaRefusesTyposAndWrongTypes(t *testing.T) {
	for _, e := range checkSchema(t, chartDir(t)) {
		t.Error(e)
	}
}

// Values the schema allows but that cannot work are refused by the
// templates with a message saying what to do.
func TestTheTemplatesRefuseValuesThatCannotWork(t *testing.T) {
	for _, c := range []struct{ name, yaml, want string }{
		{"a console password without a user", "secrets: {consolePassword: pw}", "secrets.consolePassword needs secrets.consoleUser"},
		{"a console user without a password", "secrets: {consoleUser: me}", "secrets.consoleUser needs secrets.consolePassword"},
		{"secrets beside an existing Secret", "secrets: {existingSecret: mine, apiToken: t}", "leave secrets.apiToken"},
		{"an Ingress to an open API", "rest: {ingress: {enabled: true}}", "set secrets.apiToken or secrets.existingSecret"},
		{"the rendering pool with half an image", "renderPool: {enabled: true, image: {repository: my/chromium-crawler}}", "renderPool.image: set both repository and tag"},
		{"a service address among the settings", "settings: {REDIS_HOST: r}", "set it through the values"},
		{"an API token among the settings", "rest: {settings: {API_TOKEN: t}}", "secrets go in the values secrets"},
		{"SPIDER among a crawler's settings", "crawlers: {link: {settings: {SPIDER: other}}}", "the chart sets SPIDER itself"},
		{"autoscaling without a way to find the gauge", "autoscaling: {enabled: true}", "enable metrics.serviceMonitor"},
		{"more minimum than maximum replicas", "autoscaling: {enabled: true, prometheus: {selector: 'job=\"x\"'}}\ncrawlers: {link: {autoscaling: {minReplicas: 5, maxReplicas: 2}}}", "minReplicas (5) is above maxReplicas (2)"},
		{"an admin endpoint on any free port", "settings: {ADMIN_ADDR: '127.0.0.1:0'}", "port 0 (any free port) cannot be probed"},
		{"an admin endpoint without a port", "crawlers: {link: {settings: {ADMIN_ADDR: 'localhost'}}}", "has no port the probes can use"},
	} {
		_, err := chartcheck.Render(chartDir(t), readValuesString(t, c.yaml), chartcheck.DefaultRelease)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s (%s): got %v, want an error saying %q", c.name, c.yaml, err, c.want)
		}
	}
}

// Without peers for Kafka, Redis and ZooKeeper the crawlers may reach any
// address on those ports only; with peers, only those; the networks
// allowed on purpose and the node-local DNS address are reachable.
func TestCrawlerEgressToTheClustersServices(t *testing.T) {
	policies := map[string]*networkingv1.NetworkPolicy{}
	for _, v := range variants(t) {
		r, err := render(chartDir(t), v.vals)
		if err != nil {
			t.Fatal(err)
		}
		nps := objectsOf[*networkingv1.NetworkPolicy](r)
		if len(nps) != 1 {
			t.Fatalf("%s: %d NetworkPolicies", v.name, len(nps))
		}
		policies[v.name] = nps[0]
	}
	for _, c := range []struct {
		variant, addr string
		port          int
		proto         corev1.Protocol
		want          bool
	}{
		{"default values", "10.0.0.5", 9092, corev1.ProtocolTCP, true},
		{"default values", "10.0.0.5", 6379, corev1.ProtocolTCP, true},
		{"default values", "10.0.0.5", 2181, corev1.ProtocolTCP, true},
		{"default values", "10.0.0.5", 6380, corev1.ProtocolTCP, false},
		{"default values", "169.254.169.254", 80, corev1.ProtocolTCP, false},
		{"default values", "169.254.20.10", 53, corev1.ProtocolUDP, false},
		{"ci/external-values.yaml", "10.0.0.5", 9092, corev1.ProtocolTCP, false},
		{"ci/external-values.yaml", "10.0.0.5", 6380, corev1.ProtocolTCP, false},
		{"ci/external-values.yaml", "10.30.0.7", 2181, corev1.ProtocolTCP, true},
		{"ci/external-values.yaml", "10.31.0.7", 2181, corev1.ProtocolTCP, false},
		{"ci/all-on-values.yaml", "10.0.0.5", 6379, corev1.ProtocolTCP, false},
		{"ci/all-on-values.yaml", "10.20.3.4", 80, corev1.ProtocolTCP, true},
		{"ci/all-on-values.yaml", "10.0.0.10", 3128, corev1.ProtocolTCP, true},
		{"ci/all-on-values.yaml", "10.0.0.10", 80, corev1.ProtocolTCP, false},
		{"ci/all-on-values.yaml", "169.254.20.10", 53, corev1.ProtocolUDP, true},
		{"ci/all-on-values.yaml", "169.254.20.10", 80, corev1.ProtocolTCP, false},
	} {
		np, ok := policies[c.variant]
		if !ok {
			t.Fatalf("no variant %s", c.variant)
		}
		if got := chartcheck.Egress(np, netip.MustParseAddr(c.addr), c.port, c.proto); got != c.want {
			t.Errorf("%s: crawlers reach %s %s/%d: %v, want %v", c.variant, c.addr, c.proto, c.port, got, c.want)
		}
	}
}

// breakages are changes that break the chart, each of which a check must
// catch: the file, the text replaced (it must be there) and what replaces
// it, and what the check's message says.
var breakages = []struct {
	name, file, old, new, want string
}{
	{"a readiness probe on another path", "templates/_helpers.tpl", "httpGet: {path: /readyz,", "httpGet: {path: /ready,", "the readiness probe asks /ready, not /readyz"},
	{"a liveness probe on /readyz", "templates/_helpers.tpl", "livenessProbe:\n  httpGet: {path: /healthz,", "livenessProbe:\n  httpGet: {path: /readyz,", "the liveness probe asks /readyz, not /healthz"},
	{"probes on a port the binary does not serve", "templates/_helpers.tpl", `"crawler" 9412`, `"crawler" 9413`, "the binary serves /healthz on 9412"},
	{"an image name docker/ does not build", "templates/_helpers.tpl", `printf "%s:%s-%s" $repo`, `printf "%s:%s_%s" $repo`, "docker/ builds no such image"},
	{"crawlers on another component's image", "templates/crawlers.yaml", `(list $ "crawler") }}`, `(list $ "rest") }}`, "a crawler pod runs the rest image"},
	{"a test running a program its image lacks", "templates/tests/test-crawl.yaml", `"/busybox/busybox", "sh"`, `"/bin/sh", "sh"`, "runs /bin/sh, which the rest target of docker/Dockerfile does not put in the image"},
	{"pods without runAsNonRoot", "templates/_helpers.tpl", "runAsNonRoot: true\n", "", "restricted: runAsNonRoot != true"},
	{"containers that may escalate privileges", "templates/_helpers.tpl", "allowPrivilegeEscalation: false\n", "", "restricted: allowPrivilegeEscalation != false"},
	{"containers keeping their capabilities", "templates/_helpers.tpl", "capabilities:\n  drop: [\"ALL\"]\n", "", "restricted: unrestricted capabilities"},
	{"pods without a seccomp profile", "templates/_helpers.tpl", "seccompProfile:\n  type: RuntimeDefault\n", "", "restricted: seccompProfile"},
	{"a writable root file system", "templates/_helpers.tpl", "readOnlyRootFilesystem: true\n", "", "root file system not read-only"},
	{"pods running as root", "templates/_helpers.tpl", "runAsUser: {{ .uid | default 65532 }}", "runAsUser: 0", "runAsUser=0"},
	{"a host path volume", "templates/_helpers.tpl", "        - name: tmp\n          emptyDir:\n            sizeLimit: 256Mi\n", "        - name: tmp\n          hostPath: {path: /tmp}\n", `uses restricted volume type "hostPath"`},
	{"a field the API does not have", "templates/_helpers.tpl", "  periodSeconds: 2\n", "  periodSeconds: 2\n  periodSecond: 2\n", `unknown field "periodSecond"`},
	{"a crawler killed before it drains", "templates/crawlers.yaml", `"grace" $grace`, `"grace" 10`, "leaves no time to drain"},
	{"the metadata address reachable", "templates/networkpolicy.yaml", `"169.254.0.0/16" `, "", "crawlers may reach 169.254.169.254 port 80"},
	{"a private network reachable", "templates/networkpolicy.yaml", `"10.0.0.0/8" `, "", "crawlers may reach 10.1.2.3 port 443"},
	{"the rendering pool scaled on plain demand", "templates/scaledobjects.yaml", `(ternary "scrapy_redis_monitor_eligible_render_requests" "scrapy_redis_monitor_eligible_requests" $cr.render)`, `"scrapy_redis_monitor_eligible_requests"`, "is not scrapy_redis_monitor_eligible_render_requests of spider link"},
	{"a PodDisruptionBudget selecting every crawler", "templates/poddisruptionbudgets.yaml", `"extra" (dict "scrapy-cluster/crawler" $cr.key "scrapy-cluster/spider" $cr.spider)`, "", "selects the pods of"},
}

// copyChart copies the chart into a temporary directory.
func copyChart(t *testing.T) string {
	t.Helper()
	src, dst := chartDir(t), filepath.Join(t.TempDir(), "scrapy-cluster")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// edit replaces every old in the chart's file with new; old must be there.
func edit(t *testing.T, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s has no %q to break", file, old)
	}
	if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte(old), []byte(new)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Each check fails when the chart is broken in the way it guards against:
// probes, images, security fields, API fields, drain time, egress, with the
// default values or every option on.
func TestTheChecksCatchABrokenChart(t *testing.T) {
	allOn := variantNamed(t, "ci/all-on-values.yaml")
	for _, b := range breakages {
		t.Run(b.name, func(t *testing.T) {
			dir := copyChart(t)
			edit(t, dir, b.file, b.old, b.new)
			// Some breakages show only with several crawlers, or with an
			// option on.
			found := append(problems(t, dir, nil), problems(t, dir, allOn)...)
			for _, e := range found {
				if strings.Contains(e.Error(), b.want) {
					return
				}
			}
			t.Errorf("no check says %q; they found:\n%v", b.want, found)
		})
	}
}

// The schema check fails when the schema lets typos or wrong types through.
func TestTheSchemaCheckCatchesABrokenSchema(t *testing.T) {
	for _, c := range []struct{ name, old, new, want string }{
		{"unknown keys allowed at the top", `"title": "Values of the scrapy-cluster chart (docs/kubernetes.md)",
  "type": "object",
  "additionalProperties": false,`, `"title": "Values of the scrapy-cluster chart (docs/kubernetes.md)",
  "type": "object",
  "additionalProperties": true,`, "an unknown top-level key"},
		{"a port of any type", `"port": {
          "type": "integer",
          "minimum": 1,
          "maximum": 65535
        }
      },
      "required": [
        "host",`, `"port": {}
      },
      "required": [
        "host",`, "a port as a string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyChart(t)
			edit(t, dir, "values.schema.json", c.old, c.new)
			found := checkSchema(t, dir)
			for _, e := range found {
				if strings.Contains(e.Error(), c.want) {
					return
				}
			}
			t.Errorf("the schema check does not notice %s; it found: %v", c.name, found)
		})
	}
}
