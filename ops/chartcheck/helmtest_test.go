package chartcheck_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// testPod is the helm test's Pod as the default values render it.
func testPod(t *testing.T) *corev1.Pod {
	t.Helper()
	r, err := render(chartDir(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range objectsOf[*corev1.Pod](r) {
		if p.Annotations["helm.sh/hook"] == "test" {
			return p
		}
	}
	t.Fatal("the chart renders no helm test Pod")
	return nil
}

// cluster is the four components run as the chart runs them, on loopback,
// against a real Redis and the kfake broker, with an API token.
type cluster struct {
	restURL, token string
}

func startCluster(t *testing.T) cluster {
	t.Helper()
	r := harness.StartRedis(t)
	k := harness.StartKafka(t)
	port := func() string {
		p := harness.Port(t)
		return strconv.Itoa(p)
	}
	c := cluster{token: "a-token-for-the-test"}
	restPort := port()
	c.restURL = "http://127.0.0.1:" + restPort
	env := []string{
		"REDIS_HOST=127.0.0.1", "REDIS_PORT=" + strconv.Itoa(r.Port), "KAFKA_HOSTS=" + k.Hosts(), "ZOOKEEPER_HOSTS=",
		"PUBLIC_IP_URL=", "FETCH_ALLOWED_NETWORKS=127.0.0.0/8", "LOG_LEVEL=WARNING", "SC_LOG_LEVEL=WARNING",
	}
	for _, p := range []struct {
		name string
		args []string
		env  []string
	}{
		{"kafka-monitor", []string{"run"}, []string{"ADMIN_ADDR=127.0.0.1:" + port()}},
		{"redis-monitor", nil, []string{"ADMIN_ADDR=127.0.0.1:" + port()}},
		// RETRY_TIMES 0: a page nobody serves is given up at once.
		{"crawler", nil, []string{"ADMIN_ADDR=127.0.0.1:" + port(), "RETRY_TIMES=0"}},
		{"rest", nil, []string{"FLASK_HOST=127.0.0.1", "FLASK_PORT=" + restPort, "API_TOKEN=" + c.token}},
	} {
		harness.StartProcess(t, harness.ProcessSpec{Path: bins.Path(t, p.name), Args: p.args,
			Env: append(append(os.Environ(), env...), p.env...), StopGrace: 20 * time.Second, OutputLimit: 64 << 10, Supervise: true})
	}
	// helm test runs once the release is ready (helm install --wait).
	harness.WaitFor(t, "the REST service to be ready", 60*time.Second, func() bool {
		resp, err := http.Get(c.restURL + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	return c
}

// runHelmTest runs the helm test Pod's script as the pod would (the REST
// image's busybox sh), with the pod's environment but REST_URL, CRAWL_URL
// and API_TOKEN (from the chart's Secret) given.
func runHelmTest(t *testing.T, pod *corev1.Pod, busybox string, set map[string]string) (string, error) {
	t.Helper()
	c := pod.Spec.Containers[0]
	if len(c.Command) != 3 || c.Command[1] != "sh" || c.Command[2] != "-c" || len(c.Args) != 1 {
		t.Fatalf("the helm test runs %q %q, not a script of busybox sh -c", c.Command, c.Args)
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		v, ok := set[e.Name]
		if !ok {
			if e.ValueFrom != nil {
				t.Fatalf("the test's %s comes from %v: give it", e.Name, e.ValueFrom)
			}
			v = e.Value
		}
		env = append(env, e.Name+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, busybox, "sh", "-c", c.Args[0])
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The chart's helm test feeds a crawl through REST and passes once its
// crawl-complete went out with the page published; it fails when the API
// refuses it or when the crawl publishes nothing.
func TestTheHelmTestSeesACrawlComplete(t *testing.T) {
	busybox := harness.Tool(t, "busybox", "busybox") // the helm test's script runs in it
	pod := testPod(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><body><a href="/next">a page</a></body></html>`)
	}))
	t.Cleanup(site.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL + "/"
	gone.Close() // nothing listens there any more
	c := startCluster(t)

	for _, tc := range []struct {
		name, crawl, token string
		ok                 bool
		say                string
	}{
		{"a page the crawlers reach", site.URL + "/", c.token, true, "OK: helm-test-"},
		{"a wrong API token", site.URL + "/", "not-the-token", false, "the REST service refused the crawl"},
		{"a page nobody serves", goneURL, c.token, false, "completed without a published page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runHelmTest(t, pod, busybox, map[string]string{
				"REST_URL": c.restURL, "CRAWL_URL": tc.crawl, "API_TOKEN": tc.token, "TIMEOUT": "90",
			})
			if (err == nil) != tc.ok || !strings.Contains(out, tc.say) {
				t.Errorf("the helm test script: %v, want success %v saying %q; its output:\n%s", err, tc.ok, tc.say, out)
			}
		})
	}
}
