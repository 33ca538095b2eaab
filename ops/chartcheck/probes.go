package chartcheck

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
)

// probePaths are the paths each probe must ask: liveness (and start-up)
// only whether the process serves, readiness whether its dependencies
// answer. A liveness probe on /readyz would restart every pod during a
// Redis outage, which the components ride out by design.
var probePaths = map[string]string{"startup": "/healthz", "liveness": "/healthz", "readiness": "/readyz"}

// Environment is the environment a container starts with: its envFrom
// ConfigMaps' data, then its env entries (a secret's value is a
// placeholder; values from the pod's resources are left out, none being a
// setting).
func Environment(c corev1.Container, configMaps map[string]*corev1.ConfigMap) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			return nil, fmt.Errorf("container %s: envFrom other than a ConfigMap", c.Name)
		}
		cm, ok := configMaps[from.ConfigMapRef.Name]
		if !ok {
			return nil, fmt.Errorf("container %s: envFrom names ConfigMap %s, which the chart does not make", c.Name, from.ConfigMapRef.Name)
		}
		for k, v := range cm.Data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = "a-secret"
		}
	}
	return env, nil
}

// Settings runs `<entrypoint> settings` of img, the binary at bin, with env
// as its whole environment: the image's entrypoint arguments with the
// image's files replaced by their sources under root (its settings file),
// so the binary reads what it would read in the container. It returns the
// effective settings, and fails on a setting the binary refuses or does
// not know.
func Settings(bin string, img Image, root string, env map[string]string) (map[string]any, error) {
	args := slices.Clone(img.Entrypoint[1:])
	for i, a := range args {
		if src := img.Files[a]; src != "" {
			args[i] = filepath.Join(root, src)
		}
	}
	args = append(args, "settings")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s with the container's environment: %w\n%s", path.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	if w := stderr.String(); strings.Contains(w, "WARNING") {
		return nil, fmt.Errorf("%s %s with the container's environment:\n%s", path.Base(bin), strings.Join(args, " "), w)
	}
	out := map[string]any{}
	if err := yaml.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("%s settings: %w", path.Base(bin), err)
	}
	return out, nil
}

// ServedPort is the port a component with settings s serves /healthz and
// /readyz on: its ADMIN_ADDR's, or for REST (serving them beside its API)
// FLASK_PORT.
func ServedPort(component string, s map[string]any) (int, error) {
	if component == "rest" {
		p, ok := s["FLASK_PORT"].(float64)
		if !ok {
			return 0, fmt.Errorf("FLASK_PORT is %v", s["FLASK_PORT"])
		}
		return int(p), nil
	}
	addr, _ := s[admin.Addr.Name()].(string)
	if addr == "" {
		return 0, fmt.Errorf("%s is empty: the process serves no admin endpoint to probe", admin.Addr.Name())
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", admin.Addr.Name(), addr, err)
	}
	return strconv.Atoi(port)
}

// CheckProbes checks the probes of container c, which serves its admin
// endpoint on port: start-up and liveness on /healthz, readiness on /readyz,
// each an HTTP GET of that port; and that the admin endpoint the binaries
// serve (scutils/admin) answers each path with 200 when the process and its
// dependencies are well.
func CheckProbes(c corev1.Container, port int) []error {
	var errs []error
	probes := map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe}
	for _, kind := range []string{"startup", "liveness", "readiness"} {
		p := probes[kind]
		switch {
		case p == nil:
			errs = append(errs, fmt.Errorf("container %s: no %s probe", c.Name, kind))
			continue
		case p.HTTPGet == nil:
			errs = append(errs, fmt.Errorf("container %s: the %s probe is not an HTTP GET of the admin endpoint", c.Name, kind))
			continue
		}
		get := p.HTTPGet
		if get.Path != probePaths[kind] {
			errs = append(errs, fmt.Errorf("container %s: the %s probe asks %s, not %s", c.Name, kind, get.Path, probePaths[kind]))
		}
		if got, err := containerPort(c, get.Port); err != nil || got != port {
			errs = append(errs, fmt.Errorf("container %s: the %s probe asks port %s (%d, %v); the binary serves %s on %d", c.Name, kind, get.Port.String(), got, err, get.Path, port))
		}
		if code := adminAnswer(get.Path); code != http.StatusOK {
			errs = append(errs, fmt.Errorf("container %s: the %s probe's %s gets %d from the admin endpoint", c.Name, kind, get.Path, code))
		}
	}
	return errs
}

// containerPort resolves a probe's port, a number or a port's name.
func containerPort(c corev1.Container, p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("no port named %s", p.StrVal)
}

// adminAnswer is the status the admin endpoint of every binary answers path
// with, the process well and its dependencies answering.
func adminAnswer(path string) int {
	srv := admin.New()
	srv.AddCheck(admin.Check{Name: "redis", Probe: func(context.Context) error { return nil }})
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}
