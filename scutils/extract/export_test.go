package extract

import "golang.org/x/net/html"

// BuildTree is the fast tree builder's tree of src, or errUnsure; the
// tree may be used until release is called (its memory is reused then,
// and only release's treeIndex keeps it alive: noscanBlock).
func BuildTree(src string) (root *html.Node, release func(), err error) {
	root, found, err := buildIndexedTree(src, nil)
	if err != nil {
		return nil, func() {}, err
	}
	return root, found.release, nil
}

// InnerText, ResolvePrefix and FastResolve are the fast twins, for the
// tests that compare them with what they stand for.
var (
	InnerText     = innerText
	ResolvePrefix = resolvePrefix
)

// FastResolve and FastFragment are fastResolve and fastFragment, their
// strings of their own.
func FastResolve(prefix, v string) (string, bool)    { return fastResolve(nil, prefix, v) }
func FastFragment(fragBase, v string) (string, bool) { return fastFragment(nil, fragBase, v) }

// ApplyParsed is Rules.Apply on html.Parse's tree of the page.
func ApplyParsed(rs *Rules, pageURL, text string) map[string]any {
	return rs.apply(pageURL, text, true)
}

// OneByOne is rs with each rule walking the tree on its own, xpath rules
// through antchfx/xpath: what the one walk and simplePath stand for.
func OneByOne(rs *Rules) *Rules {
	c := *rs
	c.oneByOne = true
	return &c
}

// IsSimplePath reports whether src is an xpath parseSimplePath takes.
func IsSimplePath(src string) bool {
	_, ok := parseSimplePath(src)
	return ok
}
