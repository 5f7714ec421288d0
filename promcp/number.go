package promcp

// Number returns a value of a read or do_* body as a float64: the Go
// numbers a value decoded from JSON or YAML, or produced by a driver, can
// be. ok is false for anything else (a boolean, a string, nil).
func Number(v any) (f float64, ok bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}
