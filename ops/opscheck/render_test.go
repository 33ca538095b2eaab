package opscheck_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// tini is the init the rendering image runs the crawler under, from
// Debian's tini package.
const tini = "/usr/bin/tini"

// withoutInit is entrypoint without a leading `/usr/bin/tini --`, which an
// image may run its binary under when one of its stages installs Debian's
// tini package (the check runs the binary itself).
func withoutInit(t *testing.T, chain []*stage, entrypoint []string) []string {
	t.Helper()
	if len(entrypoint) == 0 || entrypoint[0] != tini {
		return entrypoint
	}
	if !slices.Contains(aptPackages(chain), "tini") {
		t.Errorf("the ENTRYPOINT runs %s, which no stage installs (apt-get install tini)", tini)
	}
	if len(entrypoint) < 2 || entrypoint[1] != "--" {
		t.Errorf("the ENTRYPOINT runs %s without -- before the command: %q", tini, entrypoint)
		return entrypoint[1:]
	}
	return entrypoint[2:]
}

// aptPackages are the packages the RUN steps of stages install with apt-get.
func aptPackages(stages []*stage) []string {
	var pkgs []string
	for _, st := range stages {
		for _, in := range st.steps {
			if in.cmd != "RUN" {
				continue
			}
			for _, cmd := range strings.Split(in.args, "&&") {
				_, args, ok := strings.Cut(cmd, "apt-get install")
				if !ok {
					continue
				}
				for _, f := range strings.Fields(args) {
					if !strings.HasPrefix(f, "-") {
						pkgs = append(pkgs, f)
					}
				}
			}
		}
	}
	return pkgs
}

// stageNamed is df's stage called name, nil when there is none.
func stageNamed(df *dockerfile, name string) *stage {
	for _, st := range df.stages {
		if st.name == name {
			return st
		}
	}
	return nil
}

// TestTheRenderingImageRunsChromiumAsNonRoot checks what
// TestDockerfilesBuildOutsideDocker cannot run (apt-get): the rendering
// crawler image's final stage builds on a stage of Debian 12, the release
// of the plain crawler's distroless base, that installs Debian's chromium,
// fonts, CA certificates and tini without recommended packages and without
// keeping apt's lists, and creates the non-root user the final stage runs
// as; the crawler runs under tini; and the image's settings turn rendering
// on with Debian's chromium.
func TestTheRenderingImageRunsChromiumAsNonRoot(t *testing.T) {
	root := harness.Root(t)
	df := parseDockerfile(t, filepath.Join(root, dockerfilePath))
	chain := df.image(t, "crawler-render")
	final, base := chain[len(chain)-1], chain[0]
	if len(chain) != 2 {
		t.Fatalf("the crawler-render target is FROM %s, not a stage that installs Chromium FROM an image", final.image)
	}
	if p := df.image(t, "crawler")[0].image; !strings.Contains(p, "debian12") || !strings.HasPrefix(base.image, "debian:bookworm") {
		t.Errorf("the rendering image is based on %s, the plain crawler image on %s: want Debian 12 (bookworm) for both", base.image, p)
	}
	pkgs := aptPackages(chain)
	for _, want := range []string{"chromium", "ca-certificates", "tini"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("the image does not install %s (installs %v)", want, pkgs)
		}
	}
	if !slices.ContainsFunc(pkgs, func(p string) bool { return strings.HasPrefix(p, "fonts-") }) {
		t.Errorf("the image installs no fonts (installs %v): pages would lay out without glyphs", pkgs)
	}
	var user string
	for _, in := range final.steps {
		if in.cmd == "USER" {
			user = in.args
		}
	}
	uid, gid, _ := strings.Cut(user, ":")
	var run string
	for _, in := range base.steps {
		if in.cmd == "RUN" {
			run += in.args + "\n"
		}
	}
	for _, want := range []string{"--no-install-recommends", "rm -rf /var/lib/apt/lists/*"} {
		if !strings.Contains(run, want) {
			t.Errorf("the Chromium stage's RUN lacks %q", want)
		}
	}
	if uid == "" || uid == "0" || !regexp.MustCompile(`useradd [^&]*--uid `+regexp.QuoteMeta(uid)+`\b`).MatchString(run) {
		t.Errorf("the final stage runs as %q, a user the Chromium stage does not create with useradd --uid", user)
	}
	if gid != "" && !regexp.MustCompile(`groupadd [^&]*--gid `+regexp.QuoteMeta(gid)+`\b`).MatchString(run) {
		t.Errorf("the final stage runs as group %s, which the Chromium stage does not create with groupadd --gid", gid)
	}
	var entrypoint []string
	for _, in := range final.steps {
		if in.cmd == "ENTRYPOINT" {
			entrypoint = jsonArgs(t, fmt.Sprintf("%s:%d", df.path, in.line), in.args)
		}
	}
	if len(entrypoint) == 0 || entrypoint[0] != tini {
		t.Errorf("the ENTRYPOINT %q does not run the crawler under %s: orphaned Chromium processes would stay zombies", entrypoint, tini)
	}
	var settings map[string]any
	readYAML(t, root, "docker/crawler-render/settings.yaml", &settings)
	if settings["RENDER_ENABLED"] != true {
		t.Errorf("the image's settings file sets RENDER_ENABLED %v, want true", settings["RENDER_ENABLED"])
	}
	if settings["RENDER_BROWSER"] != "/usr/bin/chromium" {
		t.Errorf("the image's settings file sets RENDER_BROWSER %v, want Debian's /usr/bin/chromium", settings["RENDER_BROWSER"])
	}
}

// TestComposeRunsRenderingCrawlersOnTheirOwn checks the crawler-render
// service: the rendering image, RENDER_ENABLED on, a /dev/shm Chromium can
// work in, a profile of its own (so that `docker compose up` without it
// needs no Chromium image) and time to stop its browsers; and that the
// plain crawler service does not render.
func TestComposeRunsRenderingCrawlersOnTheirOwn(t *testing.T) {
	services := loadCompose(t, "docker-compose.yml")
	svc := services["crawler-render"]
	if svc == nil {
		t.Fatal("docker-compose.yml has no crawler-render service")
	}
	if img, _ := svc["image"].(string); !strings.Contains(img, ":crawler-render-") {
		t.Errorf("crawler-render: image %q is not the crawler-render image", img)
	}
	env, _ := svc["environment"].(map[string]any)
	if env["RENDER_ENABLED"] != "true" {
		t.Errorf("crawler-render: RENDER_ENABLED is %v, want \"true\"", env["RENDER_ENABLED"])
	}
	shm, _ := svc["shm_size"].(string)
	if m := regexp.MustCompile(`^(\d+)(mb|gb)$`).FindStringSubmatch(strings.ToLower(shm)); m == nil || (m[2] == "mb" && len(m[1]) < 3) {
		t.Errorf("crawler-render: shm_size %q; Chromium needs far more than Docker's 64 MB (want at least 100mb)", shm)
	}
	if profiles, _ := svc["profiles"].([]any); !slices.Contains(profiles, any("render")) {
		t.Errorf("crawler-render: profiles %v, want render (off unless asked for)", svc["profiles"])
	}
	if _, ok := svc["stop_grace_period"]; !ok {
		t.Error("crawler-render: no stop_grace_period: Docker's 10 s would kill it during SHUTDOWN_GRACE")
	}
	plainEnv, _ := services["crawler"]["environment"].(map[string]any)
	if v, ok := plainEnv["RENDER_ENABLED"]; ok {
		t.Errorf("crawler: RENDER_ENABLED %v: the plain crawler image has no Chromium", v)
	}
}
