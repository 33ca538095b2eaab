package opscheck_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// composeFiles are the two compose files, relative to the repository root.
var composeFiles = []string{"docker-compose.yml", "elk/docker-compose.elk.yml"}

// componentBinary is the binary each compose service of ours runs.
var componentBinary = map[string]string{
	"kafka-monitor": "kafka-monitor", "redis-monitor": "redis-monitor", "crawler": "crawler", "crawler-render": "crawler", "rest": "rest",
}

// crawlerServices are the compose services that run crawlers, scaled with
// --scale.
var crawlerServices = []string{"crawler", "crawler-render"}

// TestComposeFilesAreValid runs `docker-compose config -q` (Debian's
// docker-compose) on both compose files.
func TestComposeFilesAreValid(t *testing.T) {
	bin := harness.Tool(t, "docker-compose", "docker-compose")
	root := harness.Root(t)
	for _, f := range composeFiles {
		out, err := runErr(time.Minute, nil, bin, "-f", filepath.Join(root, f), "config", "-q")
		if err != nil {
			t.Errorf("docker-compose -f %s config -q: %v\n%s", f, err, out)
		}
	}
}

// readYAML decodes the YAML file file, a path relative to dir ("" for a
// path of its own), into v.
func readYAML(t *testing.T, dir, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func loadCompose(t *testing.T, file string) map[string]map[string]any {
	t.Helper()
	var doc struct {
		Services map[string]map[string]any `yaml:"services"`
	}
	readYAML(t, harness.Root(t), file, &doc)
	return doc.Services
}

// TestComposeServices checks what docker-compose config cannot: the
// infrastructure, the four components and the rendering crawlers are
// there, the components build from their targets of docker/Dockerfile, have fixed host names
// (stats keys carry them) and environment variables that are settings of
// their binaries, and the crawlers can be scaled (no container name, no
// published port).
func TestComposeServices(t *testing.T) {
	root := harness.Root(t)
	services := loadCompose(t, "docker-compose.yml")
	for _, want := range []string{"zookeeper", "kafka", "redis", "kafka-monitor", "redis-monitor", "crawler", "crawler-render", "rest"} {
		if _, ok := services[want]; !ok {
			t.Errorf("docker-compose.yml has no %s service", want)
		}
	}
	for name, bin := range componentBinary {
		svc := services[name]
		if svc == nil {
			continue
		}
		if h, _ := svc["hostname"].(string); h == "" {
			t.Errorf("%s: no hostname: Docker's random names would multiply the stats keys in Redis", name)
		}
		build, _ := svc["build"].(map[string]any)
		if df, target := build["dockerfile"], build["target"]; df != "docker/Dockerfile" || target != name {
			t.Errorf("%s: builds target %v of %v, not target %s of docker/Dockerfile", name, target, df, name)
		}
		known := settingNames(run(t, time.Minute, nil, binary(t, bin), "settings"))
		env, _ := svc["environment"].(map[string]any)
		for k := range env {
			if !known[k] {
				t.Errorf("%s: environment variable %s is not a setting of %s", name, k, bin)
			}
		}
	}
	for _, name := range crawlerServices {
		for _, key := range []string{"container_name", "ports"} {
			if _, ok := services[name][key]; ok {
				t.Errorf("%s: %s stops `docker compose up --scale %s=4`", name, key, name)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".dockerignore")); errors.Is(err, os.ErrNotExist) {
		t.Error("no .dockerignore: the build context would carry .git and bin/")
	}
}

// TestELKComposeKeepsTheClusterServices checks that elk/docker-compose.elk.yml
// runs the same cluster as docker-compose.yml (it cannot extend it: Debian's
// docker-compose refuses to extend services with depends_on), differing only
// in the components' logging, JSON logs and build context path, and adds
// Elasticsearch, Logstash and Kibana.
func TestELKComposeKeepsTheClusterServices(t *testing.T) {
	main := loadCompose(t, "docker-compose.yml")
	elk := loadCompose(t, "elk/docker-compose.elk.yml")
	for _, want := range []string{"elasticsearch", "logstash", "kibana"} {
		if _, ok := elk[want]; !ok {
			t.Errorf("elk/docker-compose.elk.yml has no %s service", want)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(main)) {
		want, got := maps.Clone(main[name]), maps.Clone(elk[name])
		if got == nil {
			t.Errorf("elk/docker-compose.elk.yml lacks the %s service", name)
			continue
		}
		if _, ok := componentBinary[name]; ok {
			logging, _ := got["logging"].(map[string]any)
			if logging["driver"] != "gelf" {
				t.Errorf("elk: %s does not log through gelf to Logstash", name)
			}
			delete(got, "logging")
			env, _ := got["environment"].(map[string]any)
			json := env["LOG_JSON"]
			if componentBinary[name] == "crawler" {
				json = env["SC_LOG_JSON"]
			}
			if json != "true" {
				t.Errorf("elk: %s does not log JSON", name)
			}
			for _, svc := range []map[string]any{want, got} {
				svc["environment"] = withoutJSONFlag(svc["environment"])
				if b, ok := svc["build"].(map[string]any); ok {
					b = maps.Clone(b)
					delete(b, "context")
					svc["build"] = b
				}
			}
			if b, _ := elk[name]["build"].(map[string]any); b["context"] != ".." {
				t.Errorf("elk: %s builds from context %v, not the repository root (..)", name, b["context"])
			}
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("service %s differs between the compose files:\n docker-compose.yml: %v\n elk:                %v", name, want, got)
		}
	}
}

func withoutJSONFlag(env any) any {
	m, ok := env.(map[string]any)
	if !ok {
		return env
	}
	m = maps.Clone(m)
	for k := range m {
		if strings.HasSuffix(k, "LOG_JSON") {
			delete(m, k)
		}
	}
	return m
}
