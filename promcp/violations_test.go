package promcp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/promcp"
)

// A contract violation says what is wrong where in the document, never
// the schema's internal address (mem:///schema-….json#).
func TestViolationNamesNoInternalSchema(t *testing.T) {
	v, err := promcp.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Compile("t", []byte(`{"type":"object","required":["value"],"properties":{"value":{"type":"number"}}}`)); err != nil {
		t.Fatal(err)
	}
	err = v.Validate("t", []byte(`{"value":"x"}`))
	if !errors.Is(err, promcp.ErrContract) || strings.Contains(err.Error(), "mem:///") || !strings.Contains(err.Error(), "/value") {
		t.Fatalf("Validate = %v; want ErrContract naming /value and no mem:/// address", err)
	}
	t.Log(err)
}
