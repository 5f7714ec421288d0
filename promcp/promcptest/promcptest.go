// Package promcptest helps test code that produces proMCP bodies (the
// library's own tests, the server's, the binary's end-to-end tests).
package promcptest

import (
	"testing"

	"github.com/promcp/promcp-device/promcp"
)

// Validator returns the JSON Schema validator of the proMCP bodies. A
// failure to build it fails tb.
func Validator(tb testing.TB) *promcp.Validator {
	tb.Helper()
	v, err := promcp.NewValidator()
	if err != nil {
		tb.Fatalf("proMCP validator: %v", err)
	}
	return v
}
