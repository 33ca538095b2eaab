package settings

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// convert turns v into the type of def, or explains why it cannot.
func convert(def, v any) (any, error) {
	switch def.(type) {
	case string:
		return toString(v)
	case bool:
		return toBool(v)
	case int:
		return toInt(v)
	case float64:
		return toFloat(v)
	case []string:
		return listOf(v, toString)
	case []int:
		return listOf(v, toInt)
	case map[string]any:
		return toMap(v)
	case map[string]int:
		return mapOf(v, toInt)
	case map[string]string:
		return mapOf(v, toString)
	default:
		return nil, fmt.Errorf("unsupported setting type %T", def)
	}
}

// listOf turns v, a list, into a []T, each item by conv.
func listOf[T any](v any, conv func(any) (T, error)) ([]T, error) {
	items, err := toList(v)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(items))
	for i, it := range items {
		if out[i], err = conv(it); err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
	}
	return out, nil
}

// mapOf turns v, a map, into a map[string]T, each value by conv.
func mapOf[T any](v any, conv func(any) (T, error)) (map[string]T, error) {
	m, err := toMap(v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]T, len(m))
	for k, it := range m {
		if out[k], err = conv(it); err != nil {
			return nil, fmt.Errorf("key %s: %w", k, err)
		}
	}
	return out, nil
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("string %q", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case int, int64, uint64:
		return fmt.Sprintf("integer %v", v)
	case float64:
		return fmt.Sprintf("number %v", v)
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// toString accepts strings and, leniently, scalars (YAML reads 8080 as a number).
func toString(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case bool, int, int64, uint64:
		return fmt.Sprint(t), nil
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("want a string, got %s", describe(v))
}

func toBool(v any) (bool, error) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "true", "yes", "on", "1":
			return true, nil
		case "false", "no", "off", "0", "none", "":
			return false, nil
		}
	}
	return false, fmt.Errorf("want a boolean (true/false), got %s", describe(v))
}

func toInt(v any) (int, error) {
	switch t := v.(type) {
	case int:
		return t, nil
	case int64:
		return int(t), nil
	case uint64:
		if t <= math.MaxInt {
			return int(t), nil
		}
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int(t), nil
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(t), 0, 64); err == nil {
			return int(n), nil
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(t), 64); err == nil && f == math.Trunc(f) {
			return int(f), nil
		}
	}
	return 0, fmt.Errorf("want an integer, got %s", describe(v))
}

func toFloat(v any) (float64, error) {
	switch t := v.(type) {
	case float64:
		return t, nil
	case int:
		return float64(t), nil
	case int64:
		return float64(t), nil
	case uint64:
		return float64(t), nil
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(t), 64); err == nil {
			return f, nil
		}
	}
	return 0, fmt.Errorf("want a number, got %s", describe(v))
}

func toList(v any) ([]any, error) {
	switch t := v.(type) {
	case []any:
		return t, nil
	case []string:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = s
		}
		return out, nil
	case []int:
		out := make([]any, len(t))
		for i, n := range t {
			out[i] = n
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a list, got %s", describe(v))
}

func toMap(v any) (map[string]any, error) {
	switch t := v.(type) {
	case map[string]any:
		return t, nil
	case map[string]int:
		out := make(map[string]any, len(t))
		for k, n := range t {
			out[k] = n
		}
		return out, nil
	case map[string]string:
		out := make(map[string]any, len(t))
		for k, s := range t {
			out[k] = s
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, it := range t {
			out[fmt.Sprint(k)] = it
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a map, got %s", describe(v))
}

// cloneValue copies lists and maps so callers cannot change the defaults.
func cloneValue(v any) any {
	switch t := v.(type) {
	case []string:
		return slices.Clone(t)
	case []int:
		return slices.Clone(t)
	case []any:
		return slices.Clone(t)
	case map[string]any:
		return maps.Clone(t)
	case map[string]int:
		return maps.Clone(t)
	case map[string]string:
		return maps.Clone(t)
	}
	return v
}
