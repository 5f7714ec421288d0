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

// TestValidatorCompilesKindsOnFirstUse: a new Validator has compiled
// nothing (a gateway makes one per MCP surface and never validates
// against the kinds' schemas); validating by a kind's name compiles that
// kind's schema then, and an unknown name is still an error.
func TestValidatorCompilesKindsOnFirstUse(t *testing.T) {
	// Compiling the three kinds' schemas was about 13,000 allocations.
	if n := testing.AllocsPerRun(5, func() { promcp.NewValidator() }); n > 10 {
		t.Errorf("NewValidator: %v allocations; want a handful (nothing compiled)", n)
	}
	v, err := promcp.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate("no_such_schema", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), `no schema compiled under "no_such_schema"`) {
		t.Errorf("unknown name: %v", err)
	}
	for _, k := range promcp.Kinds() {
		err := v.Validate(string(k), []byte(`{}`))
		if err == nil || !errors.Is(err, promcp.ErrContract) {
			t.Errorf("Validate(%s, {}): %v; want a contract violation from the kind's schema", k, err)
		}
	}
}
