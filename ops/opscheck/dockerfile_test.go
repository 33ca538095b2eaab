package opscheck_test

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// components are the images, by their targets in docker/Dockerfile (and
// their folders under docker/, which hold their settings files): the four
// components and the rendering crawler (the crawler with Chromium).
var components = []string{"kafka-monitor", "redis-monitor", "crawler", "crawler-render", "rest"}

// dockerfilePath is the Dockerfile of every image, from the repository root.
const dockerfilePath = "docker/Dockerfile"

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// stage is one FROM and what follows it.
type stage struct {
	name, image string
	steps       []instruction
}

// dockerfile is a parsed Dockerfile: its global ARGs and its stages.
type dockerfile struct {
	path       string
	globalArgs map[string]string
	stages     []*stage
}

var knownInstructions = []string{"FROM", "ARG", "ENV", "WORKDIR", "COPY", "RUN", "USER", "EXPOSE", "HEALTHCHECK", "ENTRYPOINT", "CMD", "LABEL", "VOLUME", "STOPSIGNAL"}

func parseDockerfile(t *testing.T, p string) *dockerfile {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	df := &dockerfile{path: p, globalArgs: map[string]string{}}
	sc := bufio.NewScanner(f)
	var cur strings.Builder
	start := 0
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (text == "" || strings.HasPrefix(text, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		} else if strings.HasPrefix(text, "#") {
			continue // a comment inside a continued instruction
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(text)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if !slices.Contains(knownInstructions, in.cmd) {
			t.Fatalf("%s:%d: %s is not an instruction this check emulates (extend dockerfile_test.go)", p, in.line, in.cmd)
		}
		switch {
		case in.cmd == "FROM":
			fields := strings.Fields(in.args)
			fields = slices.DeleteFunc(fields, func(s string) bool { return strings.HasPrefix(s, "--") })
			st := &stage{image: df.expand(fields[0], nil)}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				st.name = fields[2]
			}
			df.stages = append(df.stages, st)
		case len(df.stages) == 0 && in.cmd == "ARG":
			name, def, _ := strings.Cut(in.args, "=")
			df.globalArgs[name] = def
		case len(df.stages) == 0:
			t.Fatalf("%s:%d: %s before FROM", p, in.line, in.cmd)
		default:
			st := df.stages[len(df.stages)-1]
			st.steps = append(st.steps, in)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(df.stages) == 0 {
		t.Fatalf("%s: no FROM", p)
	}
	return df
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expand substitutes $VAR, ${VAR} and ${VAR:-default} as Docker does, from
// vars and then the global ARGs.
func (df *dockerfile) expand(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name := m[1] + m[4]
		if v, ok := vars[name]; ok && v != "" {
			return v
		}
		if v, ok := df.globalArgs[name]; ok && v != "" {
			return v
		}
		return m[3]
	})
}

// jsonArgs parses an exec-form instruction (["a", "b"]).
func jsonArgs(t *testing.T, where, s string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("%s: not the exec (JSON) form: %s", where, s)
	}
	return out
}

// buildContext copies what `docker build .` sends from the repository root,
// less what .dockerignore excludes, into a temporary directory.
func buildContext(t *testing.T) string {
	t.Helper()
	root := harness.Root(t)
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") {
			t.Fatalf(".dockerignore: exceptions (%s) are not emulated by this check", l)
		}
		patterns = append(patterns, strings.TrimPrefix(l, "/"))
	}
	dst := t.TempDir()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if dockerIgnored(rel, patterns) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(p, target)
	})
	if err != nil {
		t.Fatalf("copy the build context: %v", err)
	}
	return dst
}

// dockerIgnored matches rel against .dockerignore patterns (path.Match
// syntax, plus a leading **/ for any depth), as Docker does for a path or any
// of its parent directories.
func dockerIgnored(rel string, patterns []string) bool {
	segs := strings.Split(rel, "/")
	for _, p := range patterns {
		anyDepth := strings.HasPrefix(p, "**/")
		p = strings.TrimPrefix(p, "**/")
		for i := range segs {
			for j := i; j < len(segs); j++ {
				if i > 0 && !anyDepth {
					break
				}
				if ok, _ := path.Match(p, strings.Join(segs[i:j+1], "/")); ok {
					return true
				}
			}
		}
	}
	return false
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyTree copies a file or a directory's contents to dst.
func copyTree(src, dst string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return copyFile(src, dst)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		return copyFile(p, filepath.Join(dst, rel))
	})
}

// copyArgs splits COPY's arguments into flags, sources and destination.
func copyArgs(args string) (flags map[string]string, srcs []string, dest string) {
	flags = map[string]string{}
	fields := strings.Fields(args)
	for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
		k, v, _ := strings.Cut(strings.TrimPrefix(fields[0], "--"), "=")
		flags[k] = v
		fields = fields[1:]
	}
	if len(fields) < 2 {
		return flags, nil, ""
	}
	return flags, fields[:len(fields)-1], fields[len(fields)-1]
}

// emulateBuildStage runs a golang stage outside Docker: WORKDIR, COPY from
// the context and RUN (without its --mount flags) in a directory standing for
// the stage's file system, with the ARGs BuildKit sets for the target
// platform. It returns that directory.
func emulateBuildStage(t *testing.T, df *dockerfile, st *stage, ctxDir string) string {
	t.Helper()
	fsRoot := t.TempDir()
	cwd := fsRoot
	vars := map[string]string{"TARGETOS": "linux", "TARGETARCH": runtime.GOARCH, "BUILDPLATFORM": "linux/" + runtime.GOARCH}
	env := os.Environ()
	for _, in := range st.steps {
		where := fmt.Sprintf("%s:%d", df.path, in.line)
		switch in.cmd {
		case "ARG":
			name, def, hasDef := strings.Cut(in.args, "=")
			if _, set := vars[name]; !set || hasDef {
				if !hasDef {
					def = df.globalArgs[name]
				}
				vars[name] = def
			}
			env = append(env, name+"="+vars[name])
		case "ENV":
			name, val, _ := strings.Cut(in.args, "=")
			vars[name] = df.expand(val, vars)
			env = append(env, name+"="+vars[name])
		case "WORKDIR":
			cwd = filepath.Join(fsRoot, df.expand(in.args, vars))
			if err := os.MkdirAll(cwd, 0o755); err != nil {
				t.Fatal(err)
			}
		case "COPY":
			flags, srcs, dest := copyArgs(df.expand(in.args, vars))
			if _, ok := flags["from"]; ok {
				t.Fatalf("%s: COPY --from in a build stage is not emulated", where)
			}
			target := dest
			if !filepath.IsAbs(dest) {
				target = filepath.Join(cwd, dest)
			} else {
				target = filepath.Join(fsRoot, dest)
			}
			for _, src := range srcs {
				to := target
				if !strings.HasSuffix(dest, "/") && dest != "." && len(srcs) == 1 {
					to = target
				} else if info, err := os.Stat(filepath.Join(ctxDir, src)); err == nil && !info.IsDir() {
					to = filepath.Join(target, filepath.Base(src))
				}
				if err := copyTree(filepath.Join(ctxDir, src), to); err != nil {
					t.Fatalf("%s: COPY %s: %v", where, src, err)
				}
			}
		case "RUN":
			script := in.args
			for strings.HasPrefix(script, "--") {
				_, rest, _ := strings.Cut(script, " ")
				script = strings.TrimSpace(rest)
			}
			start := time.Now()
			cmd := exec.Command("sh", "-c", script)
			cmd.Dir, cmd.Env = cwd, env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: RUN %s: %v\n%s", where, script, err, out)
			}
			t.Logf("%s: RUN %s (%s)", where, script, time.Since(start).Round(time.Millisecond))
		case "USER", "EXPOSE", "LABEL", "HEALTHCHECK", "ENTRYPOINT", "CMD", "VOLUME", "STOPSIGNAL":
			// Nothing to emulate in a build stage.
		}
	}
	return fsRoot
}

// goWorkVersion is the major.minor of go.work's go line.
func goWorkVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.Root(t), "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.work has no go line")
	}
	return string(m[1])
}

// TestDockerfilesBuildOutsideDocker runs the build stages of
// docker/Dockerfile outside Docker, in a copy of the build context as
// .dockerignore leaves it, and then checks each component's target, with
// the stages it builds on, against what was built: every file it copies
// exists, it runs as a non-root user, and its ENTRYPOINT, run with the files
// it copies and the `settings` sub-command, loads the image's settings file,
// every key of which is a setting of that binary.
func TestDockerfilesBuildOutsideDocker(t *testing.T) {
	root := harness.Root(t)
	ctxDir := buildContext(t)
	goVersion := goWorkVersion(t)
	df := parseDockerfile(t, filepath.Join(root, dockerfilePath))
	stages := map[string]string{} // stage name -> emulated file system
	for _, st := range df.stages {
		if !strings.HasPrefix(st.image, "golang:") {
			continue // a stage of the images, or only copied from (busybox)
		}
		if v := strings.TrimPrefix(st.image, "golang:"); !strings.HasPrefix(v, goVersion) {
			t.Errorf("build image %s: go.work wants Go %s", st.image, goVersion)
		}
		stages[st.name] = emulateBuildStage(t, df, st, ctxDir)
	}
	if len(stages) == 0 {
		t.Fatal("no golang build stage")
	}
	for _, c := range components {
		t.Run(c, func(t *testing.T) {
			checkFinalStage(t, df, df.image(t, c), stages, ctxDir, c)
		})
	}
}

// image is the target stage name and the stages of df it builds on (FROM
// another stage), the one FROM an image first, the target last.
func (df *dockerfile) image(t *testing.T, name string) []*stage {
	t.Helper()
	var chain []*stage
	for st := stageNamed(df, name); st != nil; st = stageNamed(df, st.image) {
		if len(chain) > len(df.stages) {
			t.Fatalf("%s: stage %s builds on itself", df.path, name)
		}
		chain = append([]*stage{st}, chain...)
	}
	if len(chain) == 0 {
		t.Fatalf("%s: no target %s", df.path, name)
	}
	return chain
}

// checkFinalStage checks the image a target builds (chain: df.image): the
// steps of the stages it builds on count as its own. Only a base stage FROM
// an image with a shell and a package manager (the rendering crawler's
// Debian) may RUN: the target itself and the distroless stages run nothing.
func checkFinalStage(t *testing.T, df *dockerfile, chain []*stage, stages map[string]string, ctxDir, component string) {
	t.Helper()
	image := map[string]string{} // path in the image -> file here
	var user string
	var entrypoint, cmd []string
	healthcheck := false
	distroless := strings.Contains(chain[0].image, "distroless") // no shell to RUN
	for i, st := range chain {
		for _, in := range st.steps {
			where := fmt.Sprintf("%s:%d", df.path, in.line)
			switch in.cmd {
			case "COPY":
				flags, srcs, dest := copyArgs(df.expand(in.args, nil))
				from, hasFrom := flags["from"]
				fsRoot, emulated := stages[from]
				if hasFrom && !emulated {
					continue // from an image or a stage that is not emulated
				}
				for _, src := range srcs {
					var here string
					if hasFrom {
						here = filepath.Join(fsRoot, src)
					} else {
						here = filepath.Join(ctxDir, src)
					}
					if _, err := os.Stat(here); err != nil {
						t.Errorf("%s: COPY %s: the build did not produce it: %v", where, src, err)
						continue
					}
					if hasFrom {
						checkStatic(t, where, here)
					}
					to := dest
					if strings.HasSuffix(dest, "/") {
						to = path.Join(dest, path.Base(src))
					}
					image[to] = here
				}
			case "USER":
				user = in.args
			case "ENTRYPOINT":
				entrypoint = jsonArgs(t, where, in.args)
			case "CMD":
				cmd = jsonArgs(t, where, in.args)
			case "HEALTHCHECK":
				healthcheck = true
				if !strings.Contains(in.args, "CMD") {
					t.Errorf("%s: HEALTHCHECK without a command", where)
				}
			case "RUN":
				if i == len(chain)-1 || distroless {
					t.Errorf("%s: RUN in the image of %s: run it in a stage the image copies from", where, component)
				}
			}
		}
	}
	if name, _, _ := strings.Cut(user, ":"); name == "" || name == "0" || name == "root" {
		t.Errorf("the image runs as %q: it must name a non-root user", user)
	}
	if component == "rest" && !healthcheck {
		t.Error("the rest image has no HEALTHCHECK")
	}
	entrypoint = withoutInit(t, chain, entrypoint)
	if len(entrypoint) == 0 {
		t.Fatal("no ENTRYPOINT")
	}
	t.Logf("image: ENTRYPOINT %q CMD %q", entrypoint, cmd)
	// Run the entrypoint as the image would, with the settings sub-command.
	argv := make([]string, 0, len(entrypoint)+1)
	var settingsFile string
	for i, a := range entrypoint {
		if here, ok := image[a]; ok {
			a = here
			if i > 0 {
				settingsFile = here
			}
		} else if strings.HasPrefix(a, "/") {
			t.Fatalf("ENTRYPOINT uses %s, which no COPY puts in the image", a)
		}
		argv = append(argv, a)
	}
	if settingsFile == "" {
		t.Fatal("the ENTRYPOINT does not read a settings file the image holds")
	}
	out := run(t, time.Minute, nil, argv[0], append(argv[1:], "settings")...)
	defaults := run(t, time.Minute, nil, argv[0], "settings")
	known := settingNames(defaults)
	var file map[string]any
	readYAML(t, "", settingsFile, &file)
	for name := range file {
		if !known[name] {
			t.Errorf("the image's settings file sets %s, which is not a setting of %s", name, component)
		}
		if !strings.Contains(out, name+": ") || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`: .*# file$`).MatchString(out) {
			t.Errorf("%s settings does not report %s as coming from the image's settings file:\n%s", component, name, out)
		}
	}
}

// checkStatic fails when file is a dynamically linked executable: the final
// images have no C library.
func checkStatic(t *testing.T, where, file string) {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		return // not an executable (a directory, a settings file)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: %s is dynamically linked (build it with CGO_ENABLED=0)", where, filepath.Base(file))
		}
	}
}

// settingNames are the names `<binary> settings` prints.
func settingNames(out string) map[string]bool {
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z][A-Z0-9_]*):`).FindAllStringSubmatch(out, -1) {
		names[m[1]] = true
	}
	return names
}
