package domainconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"gopkg.in/yaml.v3"
)

// Document is the domain configuration: the blacklist and the per-domain
// throttles. The zero value is the empty document.
type Document struct {
	// Blacklist is the domains no crawler fetches, in document order.
	Blacklist []string
	// Domains maps a domain, as in its queue key (e.g. "dmoz.org"), to its
	// throttle.
	Domains map[string]Domain
}

// Domain is one domain's cluster-wide throttle.
type Domain struct {
	// Window is the throttle window in seconds.
	Window int
	// Hits is how many requests the window allows, before Scale.
	Hits int
	// Scale multiplies Hits; the crawlers clamp it to 0..1. A document
	// without scale reads as 1.0.
	Scale float64
}

// ScaledHits is the limit a crawler applies: Hits times Scale clamped to
// 0..1, rounded toward zero, as the original scheduler computes it. A NaN
// scale (".nan" in YAML) is ignored.
func (d Domain) ScaledHits() int {
	switch scale := d.Scale; {
	case scale >= 1 || math.IsNaN(scale):
		return d.Hits
	case scale <= 0:
		return 0
	default:
		return int(float64(d.Hits) * scale)
	}
}

// Clone returns a deep copy of d.
func (d Document) Clone() Document {
	return Document{Blacklist: slices.Clone(d.Blacklist), Domains: maps.Clone(d.Domains)}
}

// Blacklisted reports whether domain is on the blacklist.
func (d Document) Blacklisted(domain string) bool { return slices.Contains(d.Blacklist, domain) }

// UpdateDomain sets domain's throttle, adding the domain if it is new. It
// reports whether the document changed.
func (d *Document) UpdateDomain(domain string, hits, window int, scale float64) bool {
	want := Domain{Window: window, Hits: hits, Scale: scale}
	if old, ok := d.Domains[domain]; ok && old == want {
		return false
	}
	if d.Domains == nil {
		d.Domains = make(map[string]Domain)
	}
	d.Domains[domain] = want
	return true
}

// RemoveDomain drops domain's throttle, so crawlers use their defaults for
// it again. It reports whether the domain was there.
func (d *Document) RemoveDomain(domain string) bool {
	if _, ok := d.Domains[domain]; !ok {
		return false
	}
	delete(d.Domains, domain)
	return true
}

// AddBlacklist appends domain to the blacklist unless it is there already.
// It reports whether the document changed.
func (d *Document) AddBlacklist(domain string) bool {
	if d.Blacklisted(domain) {
		return false
	}
	d.Blacklist = append(d.Blacklist, domain)
	return true
}

// RemoveBlacklist takes domain off the blacklist (every occurrence, should a
// hand-written document list it twice). It reports whether it was there.
func (d *Document) RemoveBlacklist(domain string) bool {
	n := len(d.Blacklist)
	d.Blacklist = slices.DeleteFunc(d.Blacklist, func(s string) bool { return s == domain })
	return len(d.Blacklist) != n
}

// Parse reads a domain configuration document. Empty input (or a document
// that is only comments or null) is the empty document; a missing blacklist
// or domains is empty; unknown keys are ignored; a domain without scale gets
// 1.0; hits and window may be written as integers or as floats with no
// fraction (60.0). Anything else that does not fit the shape is an error
// naming the place and the problem.
func Parse(data []byte) (Document, error) {
	var doc Document
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return doc, nil
		}
		return doc, fmt.Errorf("domain configuration is not valid YAML: %w", err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return doc, errors.New("domain configuration holds more than one YAML document")
	case !errors.Is(err, io.EOF):
		return doc, fmt.Errorf("domain configuration is not valid YAML: %w", err)
	}
	n := resolve(&root)
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return doc, nil
		}
		n = resolve(n.Content[0])
	}
	if isNull(n) {
		return doc, nil
	}
	if n.Kind != yaml.MappingNode {
		return doc, fmt.Errorf("domain configuration: line %d: the document is %s, not a mapping with blacklist and domains", n.Line, describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := resolve(n.Content[i]), resolve(n.Content[i+1])
		if key.Kind != yaml.ScalarNode {
			continue
		}
		var err error
		switch key.Value {
		case "blacklist":
			doc.Blacklist, err = parseBlacklist(value)
		case "domains":
			doc.Domains, err = parseDomains(value)
		}
		if err != nil {
			return Document{}, fmt.Errorf("domain configuration: %w", err)
		}
	}
	return doc, nil
}

func parseBlacklist(n *yaml.Node) ([]string, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: blacklist is %s, not a list of domains", n.Line, describe(n))
	}
	var out []string
	for _, item := range n.Content {
		item = resolve(item)
		switch {
		case isNull(item): // "- " or "- ~": nothing to ban
		case item.Kind == yaml.ScalarNode:
			out = append(out, item.Value)
		default:
			return nil, fmt.Errorf("line %d: blacklist entry is %s, not a domain", item.Line, describe(item))
		}
	}
	return out, nil
}

func parseDomains(n *yaml.Node) (map[string]Domain, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: domains is %s, not a mapping of domain to throttle", n.Line, describe(n))
	}
	out := make(map[string]Domain, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := resolve(n.Content[i]), resolve(n.Content[i+1])
		if key.Kind != yaml.ScalarNode || isNull(key) {
			return nil, fmt.Errorf("line %d: domains has a key that is %s, not a domain", key.Line, describe(key))
		}
		d, err := parseDomain(value)
		if err != nil {
			return nil, fmt.Errorf("domains: %q: %w", key.Value, err)
		}
		out[key.Value] = d // a repeated domain: the last one wins, as in PyYAML
	}
	return out, nil
}

func parseDomain(n *yaml.Node) (Domain, error) {
	if n.Kind != yaml.MappingNode {
		return Domain{}, fmt.Errorf("line %d: the throttle is %s, not a mapping with window and hits", n.Line, describe(n))
	}
	d := Domain{Scale: 1}
	var haveWindow, haveHits bool
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := resolve(n.Content[i]), resolve(n.Content[i+1])
		var err error
		switch key.Value {
		case "window":
			d.Window, err = wholeNumber(value)
			haveWindow = true
		case "hits":
			d.Hits, err = wholeNumber(value)
			haveHits = true
		case "scale":
			d.Scale, err = number(value)
		default:
			continue
		}
		if err != nil {
			return Domain{}, fmt.Errorf("line %d: %s: %w", value.Line, key.Value, err)
		}
	}
	switch {
	case !haveWindow && !haveHits:
		return Domain{}, fmt.Errorf("line %d: window and hits are missing", n.Line)
	case !haveWindow:
		return Domain{}, fmt.Errorf("line %d: window is missing", n.Line)
	case !haveHits:
		return Domain{}, fmt.Errorf("line %d: hits is missing", n.Line)
	}
	return d, nil
}

// wholeNumber reads an integer, also when written as a float without a
// fraction (60.0).
func wholeNumber(n *yaml.Node) (int, error) {
	if n.ShortTag() == "!!int" {
		var i int
		if err := n.Decode(&i); err != nil {
			return 0, fmt.Errorf("%q is out of range", n.Value)
		}
		return i, nil
	}
	f, err := number(n)
	if err != nil {
		return 0, err
	}
	switch {
	case f != math.Trunc(f):
		return 0, fmt.Errorf("%q is not a whole number", n.Value)
	case math.Abs(f) > 1<<53:
		return 0, fmt.Errorf("%q is out of range", n.Value)
	}
	return int(f), nil
}

// number reads an integer or a float.
func number(n *yaml.Node) (float64, error) {
	switch n.ShortTag() {
	case "!!int", "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return 0, fmt.Errorf("%q is not a number", n.Value)
		}
		return f, nil
	}
	return 0, fmt.Errorf("%s is not a number", describe(n))
}

// resolve follows aliases (*name) to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// describe names what a node is, for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "empty"
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		}
		return fmt.Sprintf("the value %s", n.Value)
	}
	return "not a value"
}
