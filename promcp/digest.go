package promcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// SchemaDigest is the digest of a JSON document (a tool's output schema)
// that any client can recompute from tools/list: "sha256:" and the hex
// SHA-256 of its canonical form, the document re-encoded with object keys
// sorted, no insignificant whitespace, UTF-8 as is and no HTML escaping
// (Python: json.dumps(doc, sort_keys=True, separators=(",", ":"),
// ensure_ascii=False)).
func SchemaDigest(doc []byte) (string, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("schema digest: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("schema digest: %w", err)
	}
	return BodyDigest(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// BodyDigest is "sha256:" and the hex SHA-256 of b as it is: the digest of
// a result body over the exact bytes sent (a tool result's text content).
func BodyDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
