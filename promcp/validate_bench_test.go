package promcp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/promcp/promcptest"
)

// BenchmarkValidate: a response checked against its kind's output schema,
// the typed check (Validate on the Go value) and the JSON Schema validator
// on the encoded bytes, for a read and for can_do reports of 1 and 100
// candidates.
//
//	go test ./promcp -run '^$' -bench Validate -benchmem
func BenchmarkValidate(b *testing.B) {
	v := promcptest.Validator(b)
	read := promcp.ReadResult{Value: 21.5, Unit: "°C", Timestamp: t0, Quality: promcp.QualityGood}
	report := func(n int) promcp.CapabilityReport {
		r := validReport()
		c := r.Candidates[0]
		r.Candidates = nil
		for i := range n {
			c.Capability = fmt.Sprintf("do_set_fan_%d", i)
			c.ValidUntil = t0.Add(time.Duration(i) * time.Second)
			r.Candidates = append(r.Candidates, c)
		}
		r.Normalize()
		return r
	}
	for _, tc := range []struct {
		name string
		kind promcp.Kind
		body interface{ Validate() error }
	}{
		{"read", promcp.KindRead, read},
		{"can_do/candidates=1", promcp.KindCanDo, report(1)},
		{"can_do/candidates=100", promcp.KindCanDo, report(100)},
	} {
		raw, err := json.Marshal(tc.body)
		if err != nil {
			b.Fatal(err)
		}
		if err := v.Validate(string(tc.kind), raw); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name+"/typed", func(b *testing.B) {
			for b.Loop() {
				if err := tc.body.Validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
		if r, ok := tc.body.(promcp.CapabilityReport); ok {
			// What a can_do now runs instead of the JSON Schema validator.
			b.Run(tc.name+"/check-schema", func(b *testing.B) {
				for b.Loop() {
					if err := r.CheckSchema(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(tc.name+"/json-schema", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if err := v.Validate(string(tc.kind), raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCompileSharesIdenticalSchemas: tools with the same schema text share
// one compiled schema (a gateway of 1,000 capabilities compiles a handful,
// not 3,000), a different text gets its own, and a failed check still
// names the tool's schema it was asked for.
func TestCompileSharesIdenticalSchemas(t *testing.T) {
	v := promcptest.Validator(t)
	num := []byte(`{"type":"object","required":["value"],"properties":{"value":{"type":"number"}}}`)
	str := []byte(`{"type":"object","required":["value"],"properties":{"value":{"type":"string"}}}`)
	a, err := v.Compile("out:read_a", num)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := v.Compile("out:read_b", num)
	c, _ := v.Compile("out:read_c", str)
	if a != b || a == c {
		t.Fatalf("same text shared: %t (want true); different text shared: %t (want false)", a == b, a == c)
	}
	if err := v.Validate("out:read_b", []byte(`{"value":1}`)); err != nil {
		t.Fatal(err)
	}
	err = v.Validate("out:read_b", []byte(`{"value":"x"}`))
	if err == nil || !strings.Contains(err.Error(), "out:read_b") {
		t.Fatalf("Validate(out:read_b, bad) = %v, want an error naming out:read_b", err)
	}
	if err := v.Validate("out:read_c", []byte(`{"value":"x"}`)); err != nil {
		t.Fatal(err)
	}
}
