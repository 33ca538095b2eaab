package plugin

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// Schema is a compiled request schema with the original's Draft 4 meaning.
type Schema struct {
	name     string
	compiled *jsonschema.Schema
	doc      map[string]any
	quick    *quickSchema // nil when the schema has keywords it does not know
	defaults []propertyDefault
}

// CompileSchema compiles a Draft 4 JSON Schema (a "$schema" in the document
// may say so; without one Draft 4 is assumed, as the original validates).
func CompileSchema(name string, doc []byte) (*Schema, error) {
	parsed, err := wirejson.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	obj, ok := parsed.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema %s: not a JSON object", name)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4)
	loc := "mem://schemas/" + name + ".json"
	if err := c.AddResource(loc, obj); err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	compiled, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	quick, ok := compileQuick(obj)
	if !ok {
		quick = nil
	}
	return &Schema{name: name, compiled: compiled, doc: obj, quick: quick, defaults: compileDefaults(obj)}, nil
}

// Name is the name the schema was compiled under.
func (s *Schema) Name() string { return s.name }

// Validate reports why v (as wirejson.Decode returns it) does not match, in one
// line. A request the quick check recognises as valid skips the validator.
func (s *Schema) Validate(v any) error {
	if s.quick != nil && s.quick.accepts(v) {
		return nil
	}
	return s.validate(v)
}

// validate is Validate by the validator alone.
func (s *Schema) validate(v any) error {
	if err := s.compiled.Validate(v); err != nil {
		var verr *jsonschema.ValidationError
		if errors.As(err, &verr) {
			sortPropertyNames(verr)
		}
		return errors.New(oneLine(err))
	}
	// Draft 4 as the original runs it: an integer is a number written
	// without fraction or exponent (1.0 is a float, not an integer).
	if loc := nonIntegerAt(s.doc, v, ""); loc != "" {
		return fmt.Errorf("at '%s': got number, want integer", loc)
	}
	return nil
}

// sortPropertyNames puts the names in "additional properties ... not allowed"
// and the errors of several fields in order (by the field's location, e.g.
// '/appid' before '/priority'): the validator lists both in map order, and
// one request must get one verdict, word for word, on every path and every
// run.
func sortPropertyNames(e *jsonschema.ValidationError) {
	if k, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
		slices.Sort(k.Properties)
	}
	slices.SortStableFunc(e.Causes, func(a, b *jsonschema.ValidationError) int {
		return slices.Compare(a.InstanceLocation, b.InstanceLocation)
	})
	for _, c := range e.Causes {
		sortPropertyNames(c)
	}
}

// oneLine flattens the validator's tree of errors into "at '/x': ...; ...".
func oneLine(err error) string {
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "- ") {
			lines = append(lines, strings.TrimPrefix(l, "- "))
		}
	}
	if len(lines) == 0 {
		return err.Error()
	}
	return strings.Join(lines, "; ")
}

// nonIntegerAt returns the location of a number with a fraction or exponent
// where the schema asks for an integer, or "".
func nonIntegerAt(schema map[string]any, v any, loc string) string {
	if wantsIntegerOnly(schema["type"]) {
		if _, isFloat := v.(float64); isFloat {
			return loc
		}
	}
	switch val := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(val)) {
			child := val[k]
			if sub, ok := props[k].(map[string]any); ok {
				if l := nonIntegerAt(sub, child, loc+"/"+k); l != "" {
					return l
				}
			} else if sub, ok := schema["additionalProperties"].(map[string]any); ok {
				if l := nonIntegerAt(sub, child, loc+"/"+k); l != "" {
					return l
				}
			}
		}
	case []any:
		if sub, ok := schema["items"].(map[string]any); ok {
			for i, child := range val {
				if l := nonIntegerAt(sub, child, fmt.Sprintf("%s/%d", loc, i)); l != "" {
					return l
				}
			}
		}
	}
	return ""
}

func wantsIntegerOnly(t any) bool {
	switch tt := t.(type) {
	case string:
		return tt == "integer"
	case []any:
		hasInt, hasNumber := false, false
		for _, x := range tt {
			hasInt = hasInt || x == "integer"
			hasNumber = hasNumber || x == "number"
		}
		return hasInt && !hasNumber
	}
	return false
}

// ApplyDefaults sets every property the schema gives a default for and obj
// lacks, recursively into nested objects, as the original's validator
// extension does. Defaults are copied, so requests never share them.
func (s *Schema) ApplyDefaults(obj map[string]any) { applyDefaults(s.defaults, obj) }

// propertyDefault is a property's default (when it has one) and the
// defaults within it, for an object.
type propertyDefault struct {
	name       string
	value      any
	hasDefault bool
	nested     []propertyDefault
}

// compileDefaults lists the defaults of a schema's properties, and of
// their properties: the properties with neither are left out.
func compileDefaults(schema map[string]any) []propertyDefault {
	props, _ := schema["properties"].(map[string]any)
	var out []propertyDefault
	for name, raw := range props {
		sub, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		def, has := sub["default"]
		pd := propertyDefault{name: name, value: def, hasDefault: has, nested: compileDefaults(sub)}
		if has || len(pd.nested) > 0 {
			out = append(out, pd)
		}
	}
	return out
}

func applyDefaults(defaults []propertyDefault, obj map[string]any) {
	for _, d := range defaults {
		v, present := obj[d.name]
		if !present && d.hasDefault {
			v = deepCopy(d.value)
			obj[d.name] = v
		}
		if child, ok := v.(map[string]any); ok && len(d.nested) > 0 {
			applyDefaults(d.nested, child)
		}
	}
}

// deepCopy copies a default's value, so that requests never share one.
func deepCopy(v any) any { return mapLeaves(v, func(x any) any { return x }) }

// mapLeaves copies a decoded JSON value, objects and arrays included, with
// every other value x in it replaced by leaf(x).
func mapLeaves(v any, leaf func(any) any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = mapLeaves(x, leaf)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = mapLeaves(x, leaf)
		}
		return out
	}
	return leaf(v)
}

// hasRequired reports whether obj has every property the schema requires.
func (s *Schema) hasRequired(obj map[string]any) bool {
	required, _ := s.doc["required"].([]any)
	for _, r := range required {
		name, _ := r.(string)
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	return true
}
