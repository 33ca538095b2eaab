package extract

// BuildTree is buildTree, for the tests of package extract_test.
var BuildTree = buildTree

// InnerText, ResolvePrefix and FastResolve are the fast twins, for the
// tests that compare them with what they stand for.
var (
	InnerText     = innerText
	ResolvePrefix = resolvePrefix
	FastResolve   = fastResolve
	FastFragment  = fastFragment
)

// ApplyParsed is Rules.Apply on html.Parse's tree of the page.
func ApplyParsed(rs *Rules, pageURL, text string) map[string]any {
	return rs.apply(pageURL, text, true)
}
