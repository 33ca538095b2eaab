package settings

// groupOf declares settings by name and default only, for tests of the
// loader: GroupOf(map[string]any{"REDIS_PORT": 6379}).
func groupOf(defaults map[string]any) Group {
	g := Group{}
	for name, def := range defaults {
		g[name] = Decl{Name: name, Default: def}
	}
	return g
}

// GroupOf is groupOf for the package's external tests.
var GroupOf = groupOf
