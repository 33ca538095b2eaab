package chartcheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Image is what the chart needs to know of an image docker/ builds: read
// from its target in docker/Dockerfile and the stages that target builds on.
type Image struct {
	// Component is its target and the tag's prefix.
	Component string
	// Entrypoint is the ENTRYPOINT (exec form).
	Entrypoint []string
	// Files maps each file the image's stages copy in (by its path in the
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

// dockerfile is the Dockerfile of every image, from the repository root.
const dockerfile = "docker/Dockerfile"

// stage is what one stage of the Dockerfile says of the image: FROM (an
// image, or the stage it builds on) and what it adds.
type stage struct {
	from   string
	img    Image
	hasUID bool
}

// Images reads the images docker/Dockerfile under root builds: its stages
// that have an ENTRYPOINT, or build on one that has, by name.
func Images(root string) (map[string]Image, error) {
	file := filepath.Join(root, filepath.FromSlash(dockerfile))
	stages, order, err := readStages(file)
	if err != nil {
		return nil, err
	}
	out := map[string]Image{}
	for _, name := range order {
		img := Image{Component: name, Files: map[string]string{}}
		// The stages it builds on, the one FROM an image first.
		var chain []*stage
		for st := stages[name]; st != nil && len(chain) <= len(order); st = stages[st.from] {
			chain = append([]*stage{st}, chain...)
		}
		for _, st := range chain {
			maps.Copy(img.Files, st.img.Files)
			if st.img.Entrypoint != nil {
				img.Entrypoint = st.img.Entrypoint
			}
			if st.hasUID {
				img.UID = st.img.UID
			}
		}
		if len(img.Entrypoint) == 0 {
			continue // a stage copied from, or one the images build on
		}
		if len(img.Entrypoint) > len(tiniInit) && slices.Equal(img.Entrypoint[:len(tiniInit)], tiniInit) {
			img.Init, img.Entrypoint = tiniInit, img.Entrypoint[len(tiniInit):]
		}
		out[name] = img
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no stage with an ENTRYPOINT", file)
	}
	return out, nil
}

// readStages reads the instructions of a Dockerfile's named stages that say
// what an image holds and runs, and the stages' names in order.
func readStages(file string) (map[string]*stage, []string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	stages := map[string]*stage{}
	var order []string
	cur := &stage{}
	// Join continued lines, drop comments.
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		instr, args, _ := strings.Cut(line, " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			fields := slices.DeleteFunc(strings.Fields(args), func(f string) bool { return strings.HasPrefix(f, "--") })
			if len(fields) == 0 {
				return nil, nil, fmt.Errorf("%s:%d: FROM without an image", file, n+1)
			}
			cur = &stage{from: fields[0], img: Image{Files: map[string]string{}}}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				stages[fields[2]] = cur
				order = append(order, fields[2])
			}
		case "COPY":
			if err := cur.img.copyInto(args); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %w", file, n+1, err)
			}
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(args), &cur.img.Entrypoint); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: ENTRYPOINT not in exec form: %s", file, n+1, args)
			}
		case "USER":
			user, _, _ := strings.Cut(strings.TrimSpace(args), ":")
			if cur.img.UID, err = strconv.ParseInt(user, 10, 64); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: USER %s is not a numeric uid (Kubernetes' runAsNonRoot cannot check a name)", file, n+1, args)
			}
			cur.hasUID = true
		}
	}
	return stages, order, nil
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
			errs = append(errs, fmt.Errorf("container %s: runs %s, which the %s target of %s does not put in the image", c.Name, program, img.Component, dockerfile))
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
