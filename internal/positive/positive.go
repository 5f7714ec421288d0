// Package positive fills in defaults for settings where zero and negative
// values both mean "the default" (cmp.Or only replaces zero).
package positive

// Number is a type a setting is counted or measured in (time.Duration
// included).
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64
}

// Or returns v when it is positive, else def.
func Or[T Number](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
