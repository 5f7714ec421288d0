package manifests

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/promcp/promcp-device/fleet/trust"
)

// FleetUser is a user name and password a fleet link authenticates with.
type FleetUser struct {
	User, Password string
}

// IsZero reports whether u names no user.
func (u FleetUser) IsZero() bool { return u.User == "" }

// ReadCredentials reads a username (first line) and a password (second
// line) from a file only its owner may read: a file others may read is
// refused, as ssh refuses such a key.
func ReadCredentials(path string) (string, []byte, error) {
	lines, err := readPrivateLines(path, 2)
	if err != nil {
		return "", nil, err
	}
	if len(lines) < 2 || lines[0] == "" {
		return "", nil, fmt.Errorf("%s: want the username on the first line and the password on the second", path)
	}
	return lines[0], []byte(lines[1]), nil
}

// readPrivateLines reads up to max lines (0: all) of a file that neither
// its group nor others may read.
func readPrivateLines(path string, max int) ([]string, error) {
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
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() && (max == 0 || len(lines) < max) {
		lines = append(lines, strings.TrimRight(sc.Text(), "\r"))
	}
	return lines, sc.Err()
}

// FleetTrust is what a fleet node proves itself with and checks others
// with (see promcp-device fleet init).
type FleetTrust struct {
	// Key is the node's nkey (identity:, the seed file, mode 0600).
	Key nkeys.KeyPair
	// CA verifies the hubs' certificates (ca:).
	CA *x509.CertPool
	// Cert is a hub's TLS certificate (cert: and key:, the key mode 0600).
	Cert tls.Certificate
	// IdentitiesFile lists the fleet's nodes (identities:, a hub only).
	IdentitiesFile string
	// Files as named, resolved against the fleet file's directory.
	IdentityFile, CAFile, CertFile, KeyFile string
}

// fleetCredentials decodes the fleet file's identity, ca, cert, key,
// identities and insecure keys: the files are read (relative to the fleet
// file) and checked now, so a missing, malformed, expired or
// world-readable one is a positioned error before anything listens or
// dials. The user/password keys of earlier versions are refused with the
// way to migrate.
func fleetCredentials(f *Fleet, o obj, now time.Time) {
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(f.File), p)
	}
	f.Insecure = o.boolean("insecure")
	for _, k := range []string{"credentials", "users"} {
		if o.has(k) {
			o.add(k, ErrNotAllowed, ": user/password fleet credentials are no longer accepted (the passwords crossed the links in clear text); "+
				"run promcp-device fleet init DIR --hubs ... and name identity:, ca: (and on a hub cert:, key:, identities:) instead (docs/fleet.md, Trust)")
		}
	}
	if !o.has("identity") && !o.has("ca") {
		return
	}
	t := &FleetTrust{IdentityFile: rel(o.str("identity")), CAFile: rel(o.str("ca")), CertFile: rel(o.str("cert")),
		KeyFile: rel(o.str("key")), IdentitiesFile: rel(o.str("identities"))}
	f.Trust = t
	var err error
	if t.IdentityFile != "" {
		if t.Key, err = trust.ReadSeed(t.IdentityFile); err != nil {
			o.add("identity", ErrUnknownValue, ": %v", err)
		}
	}
	if t.CAFile != "" {
		if t.CA, err = trust.ReadCA(t.CAFile, now); err != nil {
			o.add("ca", ErrUnknownValue, ": %v", err)
		}
	}
	if t.CertFile != "" && t.KeyFile != "" && t.CA != nil {
		if t.Cert, err = trust.ReadKeyPair(t.CertFile, t.KeyFile, t.CA, now); err != nil {
			o.add("cert", ErrUnknownValue, ": %v", err)
		}
	}
	if t.IdentitiesFile != "" {
		if _, err := trust.ReadIdentities(t.IdentitiesFile); err != nil {
			o.add("identities", ErrUnknownValue, ": %v", err)
		}
	}
}

// checkFleetAuth holds the safe default: every fleet link is TLS and
// authenticated by the node's nkey unless the file says insecure: true.
func checkFleetAuth(f *Fleet, o obj) {
	if o.f == nil {
		return
	}
	secured := o.has("identity") || o.has("ca") || o.has("cert") || o.has("key") || o.has("identities")
	switch {
	case f.Insecure && secured:
		o.add("insecure", ErrNotAllowed, "with identity, ca, cert, key or identities (an insecure fleet has no TLS and authenticates nothing)")
		return
	case f.Insecure:
		return
	}
	need := []struct{ key, what string }{
		{"identity", "the node's nkey seed file (mode 0600), written by promcp-device fleet init DIR --hubs ... or fleet add-gateway DIR ID"},
		{"ca", "the fleet CA certificate (ca.crt in the fleet directory)"},
	}
	if f.Role == RoleHub {
		need = append(need, struct{ key, what string }{"cert", "the hub's TLS certificate"}, struct{ key, what string }{"key", "the hub's TLS key (mode 0600)"},
			struct{ key, what string }{"identities", "the fleet's identities file (every hub reloads it when it changes)"})
	} else {
		for _, k := range []string{"cert", "key", "identities"} {
			if o.has(k) {
				o.add(k, ErrNotAllowed, ": only a hub has a certificate and reads the identities (a %s has its identity and the ca)", f.Role)
			}
		}
	}
	for _, n := range need {
		if !o.has(n.key) {
			o.add(n.key, ErrMissing, "%s (want %s; or insecure: true on a trusted network only)", n.key, n.what)
		}
	}
}
