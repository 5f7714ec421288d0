package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/promcp/promcptest"
)

// TestTypedReadCheckAgreesWithSchema: the typed check that replaces the
// JSON Schema validation of read results accepts exactly what the tool's
// output schema accepts.
func TestTypedReadCheckAgreesWithSchema(t *testing.T) {
	v := promcptest.Validator(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tools := []ReadTool{
		{Name: "read_t", Unit: "°C", Value: map[string]any{"type": "number", "description": "In °C."}},
		{Name: "read_n", Unit: "%", Value: map[string]any{"type": "integer"}},
		{Name: "read_b", Value: map[string]any{"type": "boolean"}},
		{Name: "read_s", Value: map[string]any{"type": "string"}},
		{Name: "read_any"},
	}
	values := []any{21.5, 3.0, int64(7), int32(-5), uint16(7), uint32(9), true, "auto", nil}
	units := []promcp.Unit{"°C", "%", ""}
	for _, tool := range tools {
		check := typedReadCheck(tool)
		if check == nil {
			t.Fatalf("%s: no typed check for a plain schema", tool.Name)
		}
		schema, err := readOutputSchema(tool)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Compile(tool.Name, schema); err != nil {
			t.Fatal(err)
		}
		for _, val := range values {
			for _, u := range units {
				for _, q := range []promcp.Quality{promcp.QualityGood, promcp.QualityStale} {
					r := promcp.ReadResult{Value: val, Unit: u, Timestamp: now, Quality: q}
					if r.Validate() != nil {
						continue // refused before either check
					}
					b, _ := json.Marshal(r)
					schemaOK := v.Validate(tool.Name, b) == nil
					typedOK := check(r) == nil
					if schemaOK != typedOK {
						t.Errorf("%s: %s: schema says %t, typed check says %t", tool.Name, b, schemaOK, typedOK)
					}
				}
			}
		}
	}
	if typedReadCheck(ReadTool{Name: "read_x", Value: map[string]any{"type": "number", "minimum": 0}}) != nil {
		t.Errorf("a schema with bounds must fall back to the JSON Schema validator")
	}
}
