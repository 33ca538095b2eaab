package chartcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Image is what the chart needs to know of an image docker/ builds: read
// from the last stage of docker/<component>/Dockerfile.
type Image struct {
	// Component is its folder under docker/ and the tag's prefix.
	Component string
	// Entrypoint is the ENTRYPOINT (exec form).
	Entrypoint []string
	// Files maps each file the last stage copies in (by its path in the
	// image) to its source: a path in the build context (the repository
	// root), or "" for a file from another stage.
	Files map[string]string
	// UID is the USER's uid.
	UID int64
	// Init is the init the ENTRYPOINT runs the program under, installed
	// from a package rather than copied in (["/usr/bin/tini", "--"] for
	// the rendering crawler); Entrypoint then starts at the program.
	Init []string
}

// tiniInit is the init an image may run its program under: Debian's tini.
var tiniInit = []string{"/usr/bin/tini", "--"}

// Images reads every docker/<component>/Dockerfile under root.
func Images(root string) (map[string]Image, error) {
	dockerfiles, err := filepath.Glob(filepath.Join(root, "docker", "*", "Dockerfile"))
	if err != nil || len(dockerfiles) == 0 {
		return nil, fmt.Errorf("no docker/*/Dockerfile under %s (%v)", root, err)
	}
	out := map[string]Image{}
	for _, f := range dockerfiles {
		img, err := readDockerfile(f)
		if err != nil {
			return nil, err
		}
		out[img.Component] = img
	}
	return out, nil
}

// readDockerfile reads the instructions of a Dockerfile's last stage that
// say what the image holds and runs.
func readDockerfile(file string) (Image, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return Image{}, err
	}
	img := Image{Component: filepath.Base(filepath.Dir(file))}
	// Join continued lines, drop comments.
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		instr, args, _ := strings.Cut(line, " ")
		switch strings.ToUpper(instr) {
		case "FROM": // a new stage: only the last one's instructions count
			img = Image{Component: img.Component, Files: map[string]string{}}
		case "COPY":
			if err := img.copyInto(args); err != nil {
				return Image{}, fmt.Errorf("%s:%d: %w", file, n+1, err)
			}
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(args), &img.Entrypoint); err != nil {
				return Image{}, fmt.Errorf("%s:%d: ENTRYPOINT not in exec form: %s", file, n+1, args)
			}
		case "USER":
			user, _, _ := strings.Cut(strings.TrimSpace(args), ":")
			if img.UID, err = strconv.ParseInt(user, 10, 64); err != nil {
				return Image{}, fmt.Errorf("%s:%d: USER %s is not a numeric uid (Kubernetes' runAsNonRoot cannot check a name)", file, n+1, args)
			}
		}
	}
	if len(img.Entrypoint) > len(tiniInit) && slices.Equal(img.Entrypoint[:len(tiniInit)], tiniInit) {
		img.Init, img.Entrypoint = tiniInit, img.Entrypoint[len(tiniInit):]
	}
	if len(img.Entrypoint) == 0 {
		return Image{}, fmt.Errorf("%s: no ENTRYPOINT in the last stage", file)
	}
	return img, nil
}

// copyInto records the files a COPY puts into the image.
func (img *Image) copyInto(args string) error {
	fields := strings.Fields(args)
	fromStage := false
	for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
		fromStage = fromStage || strings.HasPrefix(fields[0], "--from=")
		fields = fields[1:]
	}
	if len(fields) < 2 {
		return fmt.Errorf("COPY %s: no source or destination", args)
	}
	dst, srcs := fields[len(fields)-1], fields[:len(fields)-1]
	for _, src := range srcs {
		target := dst
		if strings.HasSuffix(dst, "/") || len(srcs) > 1 {
			target = path.Join(dst, path.Base(src))
		}
		if fromStage {
			src = ""
		}
		img.Files[target] = src
	}
	return nil
}

// ImageRules is what the images named in the chart must be.
type ImageRules struct {
	// Repository and Tag are the values image.registry/repository and
	// image.tag: our images are <Repository>:<component>-<Tag>.
	Repository, Tag string
	// External are the images of others the values name (the dev mode's
	// Redis and Kafka, the rendering pool's crawler with Chromium): they
	// need only be pinned.
	External []string
}

// CheckImages checks every container of p: an image of ours must be one
// docker/ builds, <repository>:<component>-<tag>, and the pods of a
// component must run that component's image (the helm test runs the REST
// image's busybox); the program a container runs (its command, or else the
// image's ENTRYPOINT) must be in the image; the pod must run as the image's
// user. Other images must be ones the values name, with a tag or digest
// other than latest.
func CheckImages(p Pod, images map[string]Image, rules ImageRules) error {
	var errs []error
	component := p.Owner.Labels["app.kubernetes.io/component"]
	for _, c := range allContainers(p.Spec) {
		if slices.Contains(rules.External, c.Image) {
			if !pinned(c.Image) {
				errs = append(errs, fmt.Errorf("container %s: image %s is not pinned to a version", c.Name, c.Image))
			}
			continue
		}
		img, err := ourImage(c.Image, images, rules)
		if err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", c.Name, err))
			continue
		}
		if want := ImageOf(p); img.Component != want {
			errs = append(errs, fmt.Errorf("container %s: a %s pod runs the %s image, not %s", c.Name, component, img.Component, want))
		}
		program := img.Entrypoint[0]
		if len(c.Command) > 0 {
			program = c.Command[0]
		}
		if _, ok := img.Files[program]; !ok {
			errs = append(errs, fmt.Errorf("container %s: runs %s, which docker/%s/Dockerfile does not put in the image", c.Name, program, img.Component))
		}
		if uid := runAsUser(p, c.Name); uid == nil || *uid != img.UID {
			errs = append(errs, fmt.Errorf("container %s: runs as uid %v, the image's files belong to its USER %d", c.Name, deref(uid), img.UID))
		}
	}
	return errorsOf(p.Where, errs)
}

// ourImage finds the image docker/ builds that name is.
func ourImage(name string, images map[string]Image, rules ImageRules) (Image, error) {
	tag, ok := strings.CutPrefix(name, rules.Repository+":")
	if !ok {
		return Image{}, fmt.Errorf("image %s is neither one docker/ builds (%s:<component>-%s) nor one the values name", name, rules.Repository, rules.Tag)
	}
	component, ok := strings.CutSuffix(tag, "-"+rules.Tag)
	img, built := images[component]
	if !ok || !built {
		return Image{}, fmt.Errorf("image %s: docker/ builds no such image (%s:<component>-%s, components %v)", name, rules.Repository, rules.Tag, componentsOf(images))
	}
	return img, nil
}

// ImageOf is the image of docker/ a pod of the chart runs: its component's
// own, the crawler with Chromium (crawler-render) for the rendering pool,
// or REST's for the helm test (which needs the busybox only that image has).
func ImageOf(p Pod) string {
	switch component := p.Owner.Labels["app.kubernetes.io/component"]; {
	case component == "test":
		return "rest"
	case component == "crawler" && p.Owner.Labels["scrapy-cluster/crawler"] == "crawler-render":
		return "crawler-render"
	default:
		return component
	}
}

func componentsOf(images map[string]Image) []string {
	var out []string
	for c := range images {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// pinned: a digest, or a tag other than latest.
func pinned(image string) bool {
	if strings.Contains(image, "@sha256:") {
		return true
	}
	i := strings.LastIndex(image, ":")
	return i > strings.LastIndex(image, "/") && image[i+1:] != "latest"
}

// runAsUser is the uid a container runs as: its own securityContext's, or
// the pod's.
func runAsUser(p Pod, container string) *int64 {
	for _, c := range allContainers(p.Spec) {
		if c.Name == container && c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			return c.SecurityContext.RunAsUser
		}
	}
	if p.Spec.SecurityContext != nil {
		return p.Spec.SecurityContext.RunAsUser
	}
	return nil
}

func deref(p *int64) any {
	if p == nil {
		return "unset"
	}
	return *p
}
