package chartcheck

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// Release is what Render renders for: the release's name and namespace and
// the Kubernetes version the cluster would report (helm template's
// --kube-version; Helm's packages otherwise assume 1.20).
type Release struct {
	Name, Namespace, KubeVersion string
}

// DefaultRelease is the release the checks render.
var DefaultRelease = Release{Name: "sc", Namespace: "crawling", KubeVersion: "v1.31.0"}

// Manifest is one rendered object.
type Manifest struct {
	// Source is the template it came from ("scrapy-cluster/templates/rest.yaml").
	Source string
	// APIVersion, Kind and Name are read from the object.
	APIVersion, Kind, Name string
	// Hook is the helm.sh/hook annotation ("test"), "" for an object the
	// release installs.
	Hook string
	// YAML is the object as rendered.
	YAML []byte
}

// Where names the manifest in messages: "Deployment sc-crawler-link
// (scrapy-cluster/templates/crawlers.yaml)".
func (m Manifest) Where() string { return fmt.Sprintf("%s %s (%s)", m.Kind, m.Name, m.Source) }

// ReadValues reads a values file as `helm -f` does.
func ReadValues(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal(b, &vals); err != nil {
		return nil, fmt.Errorf("read values %s: %w", file, err)
	}
	return vals, nil
}

// Lint is `helm lint --strict` of the chart in dir with vals (nil: the
// chart's own) for the Kubernetes version kube: every message of warning
// severity or worse, as the command fails on them.
func Lint(dir string, vals map[string]any, kube string) ([]string, error) {
	kv, err := chartutil.ParseKubeVersion(kube)
	if err != nil {
		return nil, err
	}
	if vals == nil {
		vals = map[string]any{}
	}
	linter := lint.AllWithKubeVersion(dir, vals, DefaultRelease.Namespace, kv)
	var failures []string
	for _, m := range linter.Messages {
		if m.Severity >= support.WarningSev {
			failures = append(failures, m.Error())
		}
	}
	return failures, nil
}

// Render is `helm template <name> <dir> --namespace <namespace>
// --kube-version <version>` with vals as the values given (nil: none): the
// chart's defaults coalesced with vals and checked against
// values.schema.json, the templates rendered, NOTES.txt set aside, the
// objects split and sorted in install order, hooks (the tests) last.
func Render(dir string, vals map[string]any, rel Release) ([]Manifest, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load the chart %s: %w", dir, err)
	}
	kv, err := chartutil.ParseKubeVersion(rel.KubeVersion)
	if err != nil {
		return nil, err
	}
	caps := &chartutil.Capabilities{KubeVersion: *kv, APIVersions: chartutil.DefaultVersionSet, HelmVersion: chartutil.DefaultCapabilities.HelmVersion}
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, kv.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion %s, incompatible with Kubernetes %s", c, kv)
	}
	if vals == nil {
		vals = map[string]any{}
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, err
	}
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, m := range manifests {
		mf, err := newManifest(m.Name, m.Content, "")
		if err != nil {
			return nil, err
		}
		out = append(out, mf)
	}
	for _, h := range hooks {
		events := make([]string, len(h.Events))
		for i, e := range h.Events {
			events[i] = string(e)
		}
		mf, err := newManifest(h.Path, h.Manifest, strings.Join(events, ","))
		if err != nil {
			return nil, err
		}
		out = append(out, mf)
	}
	return out, nil
}

// Values are the values the templates see for vals: the chart's
// values.yaml coalesced with vals, as Render renders them.
func Values(dir string, vals map[string]any) (map[string]any, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load the chart %s: %w", dir, err)
	}
	if vals == nil {
		vals = map[string]any{}
	}
	return chartutil.CoalesceValues(ch, vals)
}

func newManifest(source, content, hook string) (Manifest, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(content), &head); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", source, err)
	}
	if head.APIVersion == "" || head.Kind == "" || head.Metadata.Name == "" {
		return Manifest{}, fmt.Errorf("%s: an object without apiVersion, kind or metadata.name:\n%s", source, content)
	}
	return Manifest{Source: source, APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Metadata.Name,
		Hook: hook, YAML: []byte(content)}, nil
}

// errorsOf joins errs into one error naming where they were found, or nil.
func errorsOf(where string, errs []error) error {
	errs = slices.DeleteFunc(errs, func(e error) bool { return e == nil })
	if len(errs) == 0 {
		return nil
	}
	var b bytes.Buffer
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %v", e)
	}
	return fmt.Errorf("%s:%s", where, b.String())
}
