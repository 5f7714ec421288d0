// Package trust holds a fleet's identities and the NATS permissions each
// node gets: the fleet's own certificate authority (ECDSA P-256), a TLS
// certificate per hub member (which is also the cluster identity: only
// hubs hold a certificate the CA signed, and hub routes require one), an
// nkey per node (Ed25519: the node proves it holds the seed by signing
// the server's nonce, so no secret crosses a link), and the identities
// file the hubs read: which public key is which node, in which role, and
// which are revoked.
//
// It depends on no NATS server: natsembed turns Permissions into the
// server's, and the fleet commands write the files.
package trust

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/promcp/promcp-device/internal/asciiname"
)

// Role is a node's role in the identities file.
type Role string

// The roles.
const (
	// RoleHub is a hub member: it runs the shared-state service and the
	// fleet endpoint, and creates the buckets and streams.
	RoleHub Role = "hub"
	// RoleGateway is an edge or thin-edge gateway.
	RoleGateway Role = "gateway"
)

// Identity is one line of the identities file: a node, its role and its
// public nkey; Revoked nodes are refused.
type Identity struct {
	Node    string
	Role    Role
	Key     string // public user nkey, "U…"
	Revoked bool
}

// validNodeID is a node id: no dots, so that it is one subject token.
// (`^[A-Za-z0-9_-]{1,64}$`, checked without a regular expression: its
// counted repetition compiles to about 60 KB at init.)
func validNodeID(s string) bool { return asciiname.Match(s, 1, 64, "_-") }

// ValidNode reports whether id can name a node (one subject token).
func ValidNode(id string) error {
	if !validNodeID(id) {
		return fmt.Errorf("node id %q: want 1 to 64 of A-Z a-z 0-9 _ - (no dots)", id)
	}
	return nil
}

// IdentitiesHeader opens every identities file.
const IdentitiesHeader = `# promcp-device fleet identities: "node role public-nkey", or "revoked node role public-nkey".
# Written by promcp-device fleet init / add-gateway / revoke; every hub reads it and reloads it when it changes.
`

// ParseIdentities parses an identities file's content; errors name
// file:line.
func ParseIdentities(file string, data []byte) ([]Identity, error) {
	var out []Identity
	var errs []error
	seenNode, seenKey := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		id := Identity{}
		if f[0] == "revoked" {
			id.Revoked, f = true, f[1:]
		}
		if len(f) != 3 {
			errs = append(errs, fmt.Errorf("%s:%d: want \"node role public-nkey\" (or \"revoked node role public-nkey\")", file, n))
			continue
		}
		id.Node, id.Role, id.Key = f[0], Role(f[1]), f[2]
		switch {
		case ValidNode(id.Node) != nil:
			errs = append(errs, fmt.Errorf("%s:%d: %w", file, n, ValidNode(id.Node)))
		case id.Role != RoleHub && id.Role != RoleGateway:
			errs = append(errs, fmt.Errorf("%s:%d: role %q (want hub or gateway)", file, n, id.Role))
		case !nkeys.IsValidPublicUserKey(id.Key):
			errs = append(errs, fmt.Errorf("%s:%d: %q is not a public user nkey (U…)", file, n, id.Key))
		case seenKey[id.Key]:
			errs = append(errs, fmt.Errorf("%s:%d: key of %s listed twice", file, n, id.Node))
		case seenNode[id.Node] && !id.Revoked:
			errs = append(errs, fmt.Errorf("%s:%d: node %s has a live identity already", file, n, id.Node))
		default:
			seenKey[id.Key] = true
			if !id.Revoked {
				seenNode[id.Node] = true
			}
			out = append(out, id)
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", file, err))
	}
	return out, errors.Join(errs...)
}

// ReadIdentities reads and parses the identities file at path.
func ReadIdentities(path string) ([]Identity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseIdentities(path, data)
}

func formatIdentities(ids []Identity) []byte {
	var b bytes.Buffer
	b.WriteString(IdentitiesHeader)
	for _, id := range ids {
		if id.Revoked {
			b.WriteString("revoked ")
		}
		fmt.Fprintf(&b, "%s %s %s\n", id.Node, id.Role, id.Key)
	}
	return b.Bytes()
}

// ReadSeed reads a node's nkey seed from a file only its owner may read
// (as ssh refuses a key others may read) and returns the key pair.
func ReadSeed(path string) (nkeys.KeyPair, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %04o): chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(data))
	if err != nil {
		return nil, fmt.Errorf("%s: not an nkey seed: %w", path, err)
	}
	if pub, _ := kp.PublicKey(); !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("%s: not a user nkey seed (want SU…)", path)
	}
	return kp, nil
}
