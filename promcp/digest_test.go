package promcp_test

import (
	"testing"

	"github.com/promcp/promcp-device/promcp"
)

// TestSchemaDigest: the digest is the one a client in another language
// recomputes from tools/list. The expected value was computed with Python:
// json.dumps(json.loads(doc), sort_keys=True, separators=(",", ":"),
// ensure_ascii=False), then SHA-256. Whitespace and key order do not
// change it; content does.
func TestSchemaDigest(t *testing.T) {
	const python = "sha256:27e05cd2b6cd16550ab40ebcc3e91715a65b793fd3b0dc10a4e536ae3a445443"
	for _, doc := range []string{
		`{ "unit": {"const": "°C"}, "b": [1, 0.1, {"z": true, "a": null}], "a<b": "x&y" }`,
		"{\"a<b\":\"x&y\",\n  \"unit\":{\"const\":\"°C\"},\"b\":[1,0.1,{\"a\":null,\"z\":true}]}",
	} {
		got, err := promcp.SchemaDigest([]byte(doc))
		if err != nil || got != python {
			t.Errorf("SchemaDigest(%s) = %s, %v; want %s", doc, got, err, python)
		}
	}
	if got, _ := promcp.SchemaDigest([]byte(`{"unit": {"const": "°F"}}`)); got == python {
		t.Error("a different schema has the same digest")
	}
	if _, err := promcp.SchemaDigest([]byte(`{"unit":`)); err == nil {
		t.Error("SchemaDigest of broken JSON: no error")
	}
}
