// Command settings-gen writes what the components' setting declarations
// determine: scutils/settings/names.go (every component's setting names)
// and the settings tables of the component pages in docs/ (see package
// settingsdoc). Run it from anywhere in the repository: make settings.
package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/scrapycluster/scrapy-cluster-go/ops/settingsdoc"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "settings-gen:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := harness.WorkspaceRoot()
	if err != nil {
		return err
	}
	files, err := settingsdoc.Generate(root, settingsdoc.Components())
	if err != nil {
		return err
	}
	for _, path := range slices.Sorted(maps.Keys(files)) {
		full := filepath.Join(root, path)
		old, err := os.ReadFile(full)
		if err == nil && bytes.Equal(old, files[path]) {
			continue
		}
		if err := os.WriteFile(full, files[path], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", path)
	}
	return nil
}
