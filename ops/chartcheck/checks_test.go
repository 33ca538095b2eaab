package chartcheck_test

import (
	"fmt"
	"net/netip"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/scrapycluster/scrapy-cluster-go/ops/chartcheck"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// bins are the components' binaries, whose settings the probe checks read.
var bins = harness.Binaries{Packages: []string{
	"./kafka-monitor/cmd/kafka-monitor", "./redis-monitor/cmd/redis-monitor", "./crawler/cmd/crawler", "./rest/cmd/rest",
}}

func TestMain(m *testing.M) { bins.Main(m) }

// components are the Scrapy Cluster components the chart deploys, by the
// app.kubernetes.io/component label of their pods.
var components = []string{"kafka-monitor", "redis-monitor", "crawler", "rest"}

// chartDir is charts/scrapy-cluster.
func chartDir(tb testing.TB) string {
	return filepath.Join(harness.Root(tb), "charts", "scrapy-cluster")
}

// variant is a set of values the chart is checked with.
type variant struct {
	name string
	vals map[string]any
}

// variants are the default values and each values file under ci/ (every
// option on; external services).
func variants(t *testing.T) []variant {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir(t), "ci", "*-values.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("the values files under charts/scrapy-cluster/ci: %v %v", files, err)
	}
	out := []variant{{name: "default values"}}
	for _, f := range files {
		vals, err := chartcheck.ReadValues(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, variant{name: "ci/" + filepath.Base(f), vals: vals})
	}
	return out
}

// variantNamed is the values of the variant called name.
func variantNamed(t *testing.T, name string) map[string]any {
	t.Helper()
	for _, v := range variants(t) {
		if v.name == name {
			return v.vals
		}
	}
	t.Fatalf("no variant %s", name)
	return nil
}

// rendering is the chart rendered with some values and decoded.
type rendering struct {
	values    map[string]any // as the templates see them
	manifests []chartcheck.Manifest
	objs      []any
}

func render(dir string, vals map[string]any) (*rendering, error) {
	values, err := chartcheck.Values(dir, vals)
	if err != nil {
		return nil, err
	}
	ms, err := chartcheck.Render(dir, vals, chartcheck.DefaultRelease)
	if err != nil {
		return nil, err
	}
	objs, err := chartcheck.DecodeAll(ms)
	if err != nil {
		return nil, err
	}
	return &rendering{values: values, manifests: ms, objs: objs}, nil
}

// value reads a value by its dotted path ("image.tag"); "" when absent.
func (r *rendering) value(dotted string) string {
	var v any = r.values
	for _, k := range strings.Split(dotted, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func objectsOf[T any](r *rendering) []T {
	var out []T
	for _, o := range r.objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// problems runs every check on the chart in dir rendered with vals (the
// chart's own values when nil) and returns what they find.
func problems(t *testing.T, dir string, vals map[string]any) []error {
	t.Helper()
	r, err := render(dir, vals)
	if err != nil {
		return []error{err}
	}
	images, err := chartcheck.Images(harness.Root(t))
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, p := range chartcheck.Pods(r.objs) {
		errs = append(errs, chartcheck.Restricted(p), chartcheck.CheckImages(p, images, r.imageRules()))
		errs = append(errs, checkComponent(t, r, p, images)...)
	}
	errs = append(errs, checkReferences(r)...)
	errs = append(errs, checkEgress(r)...)
	return slices.DeleteFunc(errs, func(e error) bool { return e == nil })
}

// imageRules: our images as the values name them, and the others the
// values name.
func (r *rendering) imageRules() chartcheck.ImageRules {
	repo := r.value("image.repository")
	if reg := r.value("image.registry"); reg != "" {
		repo = strings.TrimSuffix(reg, "/") + "/" + repo
	}
	rules := chartcheck.ImageRules{Repository: repo, Tag: r.value("image.tag"),
		External: []string{r.value("dev.redis.image"), r.value("dev.kafka.image")}}
	if repo := r.value("renderPool.image.repository"); repo != "" {
		rules.External = append(rules.External, repo+":"+r.value("renderPool.image.tag"))
	}
	return rules
}

// checkComponent checks the container of a component's pod against its
// binary: run with the container's environment, the binary accepts every
// setting and knows its name, serves its admin endpoint where the probes
// ask; a crawler's grace period outlasts SHUTDOWN_GRACE and it crawls its
// Deployment's spider type.
func checkComponent(t *testing.T, r *rendering, p chartcheck.Pod, images map[string]chartcheck.Image) []error {
	t.Helper()
	component := p.Owner.Labels["app.kubernetes.io/component"]
	if !slices.Contains(components, component) {
		return nil
	}
	i := slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == component })
	if i < 0 {
		return []error{fmt.Errorf("%s: no container named %s", p.Where, component)}
	}
	c := p.Spec.Containers[i]
	configMaps := map[string]*corev1.ConfigMap{}
	for _, cm := range objectsOf[*corev1.ConfigMap](r) {
		configMaps[cm.Name] = cm
	}
	env, err := chartcheck.Environment(c, configMaps)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", p.Where, err)}
	}
	settings, err := settingsOf(t, images[chartcheck.ImageOf(p)], env)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", p.Where, err)}
	}
	port, err := chartcheck.ServedPort(component, settings)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", p.Where, err)}
	}
	var errs []error
	for _, e := range chartcheck.CheckProbes(c, port) {
		errs = append(errs, fmt.Errorf("%s: %w", p.Where, e))
	}
	if component == "crawler" {
		errs = append(errs, checkCrawler(p, c, settings))
	}
	return errs
}

// settingsCache holds what settingsOf found, by binary and environment:
// most renderings give the components the same environment.
var settingsCache sync.Map

// settingsOf is chartcheck.Settings of img's binary with env, once per
// binary and environment.
func settingsOf(t *testing.T, img chartcheck.Image, env map[string]string) (map[string]any, error) {
	t.Helper()
	bin := bins.Path(t, path.Base(img.Entrypoint[0]))
	key := bin + "\x00" + fmt.Sprint(env) // fmt prints maps sorted by key
	type result struct {
		settings map[string]any
		err      error
	}
	if r, ok := settingsCache.Load(key); ok {
		return r.(result).settings, r.(result).err
	}
	s, err := chartcheck.Settings(bin, img, harness.Root(t), env)
	settingsCache.Store(key, result{s, err})
	return s, err
}

// checkCrawler: the pod's grace period covers the preStop pause and
// SHUTDOWN_GRACE with time to spare for returning leases and flushing
// Kafka; SPIDER is the Deployment's spider label.
func checkCrawler(p chartcheck.Pod, c corev1.Container, settings map[string]any) error {
	grace, _ := settings["SHUTDOWN_GRACE"].(float64)
	var pause int64
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		pause = c.Lifecycle.PreStop.Sleep.Seconds
	}
	const spare = 5 // seconds to return the leases left and flush the producer
	tg := int64(30) // Kubernetes' default
	if p.Spec.TerminationGracePeriodSeconds != nil {
		tg = *p.Spec.TerminationGracePeriodSeconds
	}
	if float64(tg) < float64(pause)+grace+spare {
		return fmt.Errorf("%s: terminationGracePeriodSeconds %d leaves no time to drain: preStop %ds + SHUTDOWN_GRACE %vs + %ds", p.Where, tg, pause, grace, spare)
	}
	if spider := p.Owner.Labels["scrapy-cluster/spider"]; settings["SPIDER"] != spider {
		return fmt.Errorf("%s: crawls SPIDER %v, labelled spider %s", p.Where, settings["SPIDER"], spider)
	}
	return nil
}

// checkReferences checks what refers to what: each PodDisruptionBudget,
// Service and NetworkPolicy selects pods of the chart (a budget those of one
// Deployment), Services and Ingresses reach named ports, the
// ServiceMonitor finds the metrics Services, each ScaledObject scales a
// crawler Deployment that leaves its replicas to it.
func checkReferences(r *rendering) []error {
	deployments := objectsOf[*appsv1.Deployment](r)
	var errs []error
	podsOf := func(sel map[string]string) []*appsv1.Deployment {
		var out []*appsv1.Deployment
		for _, d := range deployments {
			if len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(d.Spec.Template.Labels)) {
				out = append(out, d)
			}
		}
		return out
	}
	for _, d := range deployments {
		if n := len(podsOf(d.Spec.Selector.MatchLabels)); n != 1 {
			errs = append(errs, fmt.Errorf("Deployment %s: its selector matches the pods of %d Deployments", d.Name, n))
		}
	}
	for _, pdb := range objectsOf[*policyv1.PodDisruptionBudget](r) {
		if n := len(podsOf(pdb.Spec.Selector.MatchLabels)); n != 1 {
			errs = append(errs, fmt.Errorf("PodDisruptionBudget %s: selects the pods of %d Deployments", pdb.Name, n))
		}
	}
	services := map[string]*corev1.Service{}
	for _, s := range objectsOf[*corev1.Service](r) {
		services[s.Name] = s
		ds := podsOf(s.Spec.Selector)
		if len(ds) == 0 {
			errs = append(errs, fmt.Errorf("Service %s: selects no pod", s.Name))
		}
		for _, d := range ds {
			for _, sp := range s.Spec.Ports {
				if !hasPort(d.Spec.Template.Spec, sp.TargetPort.String()) {
					errs = append(errs, fmt.Errorf("Service %s: port %s targets %s, which Deployment %s does not name", s.Name, sp.Name, sp.TargetPort.String(), d.Name))
				}
			}
		}
	}
	for _, in := range objectsOf[*networkingv1.Ingress](r) {
		for _, rule := range in.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				if svc := services[p.Backend.Service.Name]; svc == nil || !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.Name == p.Backend.Service.Port.Name }) {
					errs = append(errs, fmt.Errorf("Ingress %s: backend %s port %s is no Service port", in.Name, p.Backend.Service.Name, p.Backend.Service.Port.Name))
				}
			}
		}
	}
	errs = append(errs, checkServiceMonitors(r, services)...)
	errs = append(errs, checkScaledObjects(r, deployments)...)
	return errs
}

func hasPort(spec corev1.PodSpec, name string) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name || strconv.Itoa(int(p.ContainerPort)) == name {
				return true
			}
		}
	}
	return false
}

// checkServiceMonitors: the ServiceMonitor scrapes each component's
// /metrics on a port its Services name, with the component as the job (the
// alerts' job names).
func checkServiceMonitors(r *rendering, services map[string]*corev1.Service) []error {
	var errs []error
	for _, sm := range objectsOf[*monitoringv1.ServiceMonitor](r) {
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil {
			return []error{fmt.Errorf("ServiceMonitor %s: %w", sm.Name, err)}
		}
		scraped := map[string]bool{}
		for _, svc := range services {
			if !sel.Matches(labels.Set(svc.Labels)) {
				continue
			}
			for _, ep := range sm.Spec.Endpoints {
				if slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) && ep.Path == "/metrics" {
					scraped[svc.Labels[sm.Spec.JobLabel]] = true
				}
			}
		}
		for _, c := range components {
			if !scraped[c] {
				errs = append(errs, fmt.Errorf("ServiceMonitor %s: scrapes no /metrics of job %s", sm.Name, c))
			}
		}
	}
	return errs
}

// checkScaledObjects: each scales a crawler Deployment without replicas of
// its own, on the eligible-requests gauge of its spider type (the render
// one for the rendering pool).
func checkScaledObjects(r *rendering, deployments []*appsv1.Deployment) []error {
	var errs []error
	for _, so := range objectsOf[*chartcheck.ScaledObject](r) {
		i := slices.IndexFunc(deployments, func(d *appsv1.Deployment) bool { return d.Name == so.Spec.ScaleTargetRef.Name })
		if i < 0 {
			errs = append(errs, fmt.Errorf("ScaledObject %s: scales %s, no Deployment of the chart", so.Name, so.Spec.ScaleTargetRef.Name))
			continue
		}
		d := deployments[i]
		if d.Spec.Replicas != nil {
			errs = append(errs, fmt.Errorf("ScaledObject %s: Deployment %s sets replicas, which every upgrade would reset under the autoscaler", so.Name, d.Name))
		}
		spider := d.Spec.Template.Labels["scrapy-cluster/spider"]
		// The rendering pool scales on what only it can take.
		gauge := "scrapy_redis_monitor_eligible_requests"
		if d.Spec.Template.Labels["scrapy-cluster/crawler"] == "crawler-render" {
			gauge = "scrapy_redis_monitor_eligible_render_requests"
		}
		for _, tr := range so.Spec.Triggers {
			known := []string{"serverAddress", "query", "threshold", "activationThreshold", "namespace", "customHeaders", "ignoreNullValues", "queryParameters", "unsafeSsl", "timeout"}
			for k := range tr.Metadata {
				if !slices.Contains(known, k) {
					errs = append(errs, fmt.Errorf("ScaledObject %s: %s is no setting of KEDA's prometheus scaler", so.Name, k))
				}
			}
			if _, err := strconv.ParseFloat(tr.Metadata["threshold"], 64); err != nil || tr.Type != "prometheus" {
				errs = append(errs, fmt.Errorf("ScaledObject %s: a %s trigger with threshold %q", so.Name, tr.Type, tr.Metadata["threshold"]))
			}
			if q := tr.Metadata["query"]; !strings.Contains(q, gauge+"{") || !strings.Contains(q, `spider="`+spider+`"`) {
				errs = append(errs, fmt.Errorf("ScaledObject %s: query %q is not %s of spider %s", so.Name, q, gauge, spider))
			}
		}
	}
	return errs
}

// blocked are addresses FETCH_BLOCK_PRIVATE refuses (crawler/fetch/guard.go)
// that a crawler must not reach on web ports; open are public ones it must.
var (
	blocked = []string{
		"0.0.0.1", "10.1.2.3", "100.64.0.1", "100.100.100.200", "127.0.0.1", "169.254.169.254", "172.16.5.4",
		"172.31.255.255", "192.0.0.170", "192.168.1.1", "198.18.0.1", "224.0.0.1", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::127.0.0.1", "::ffff:169.254.169.254", "::ffff:8.8.8.8", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1",
		"64:ff9b:1::1", "100::1", "fd00:ec2::254", "fe80::1", "fec0::1", "ff02::1",
	}
	open = []string{"8.8.8.8", "93.184.215.14", "1.1.1.1", "2606:4700:4700::1111", "64:ff9b::808:808", "2a00:1450:4001:80b::200e"}
)

// checkEgress: the crawlers' NetworkPolicy is valid, selects every crawler
// pod, and lets them reach the public web on any port but no internal
// address on web ports.
func checkEgress(r *rendering) []error {
	var errs []error
	policies := objectsOf[*networkingv1.NetworkPolicy](r)
	if r.value("networkPolicy.enabled") != "true" {
		return nil
	}
	if len(policies) != 1 {
		return []error{fmt.Errorf("networkPolicy.enabled renders %d NetworkPolicies, not one", len(policies))}
	}
	np := policies[0]
	errs = append(errs, chartcheck.CheckIPBlocks(np))
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		errs = append(errs, fmt.Errorf("NetworkPolicy %s: no Egress policy type", np.Name))
	}
	for _, p := range chartcheck.Pods(r.objs) {
		isCrawler := p.Owner.Labels["app.kubernetes.io/component"] == "crawler"
		if selected := labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels).Matches(labels.Set(p.Meta.Labels)); selected != isCrawler {
			errs = append(errs, fmt.Errorf("NetworkPolicy %s: selects %s: %v", np.Name, p.Where, selected))
		}
	}
	allowed := func(a string, port int) bool {
		return chartcheck.Egress(np, netip.MustParseAddr(a), port, corev1.ProtocolTCP)
	}
	for _, a := range blocked {
		for _, port := range []int{80, 443, 8080} {
			if allowed(a, port) {
				errs = append(errs, fmt.Errorf("NetworkPolicy %s: crawlers may reach %s port %d", np.Name, a, port))
			}
		}
	}
	for _, a := range open {
		for _, port := range []int{80, 443, 8443} {
			if !allowed(a, port) {
				errs = append(errs, fmt.Errorf("NetworkPolicy %s: crawlers may not reach %s port %d", np.Name, a, port))
			}
		}
	}
	if !slices.ContainsFunc(np.Spec.Egress, func(rule networkingv1.NetworkPolicyEgressRule) bool {
		return slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool {
			return p.Protocol != nil && *p.Protocol == corev1.ProtocolUDP && p.Port != nil && p.Port.IntValue() == 53
		})
	}) {
		errs = append(errs, fmt.Errorf("NetworkPolicy %s: no DNS (UDP 53) rule", np.Name))
	}
	return errs
}
