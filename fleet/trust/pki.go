package trust

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// Validity of what init issues.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	CertValidity = 2 * 365 * 24 * time.Hour
)

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(name string, now time.Time) (*ca, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: name, Organization: []string{"promcp fleet"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(CAValidity), IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return &ca{cert: cert, key: key, pem: pemBlock("CERTIFICATE", der)}, pemBlock("EC PRIVATE KEY", kb), nil
}

// hubCert issues hub member name's certificate, for the client, leaf and
// cluster ports: usable as server and as client (its routes dial with it).
func (c *ca) hubCert(name string, hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: name, OrganizationalUnit: []string{"hub"}, Organization: []string{"promcp fleet"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(CertValidity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	for _, h := range append([]string{name}, hosts...) {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", kb), nil
}

func loadCA(certPath, keyPath string) (*ca, error) {
	cb, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("the CA's key (add-gateway needs none, but it is kept with the CA): %w", err)
	}
	b, _ := pem.Decode(cb)
	if b == nil {
		return nil, fmt.Errorf("%s: no PEM certificate", certPath)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certPath, err)
	}
	k, _ := pem.Decode(kb)
	if k == nil {
		return nil, fmt.Errorf("%s: no PEM key", keyPath)
	}
	key, err := x509.ParseECPrivateKey(k.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	return &ca{cert: cert, key: key, pem: cb}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// ReadCA reads the fleet's CA certificate: a pool to verify the hubs'
// (and, on a hub, the routes') certificates with. An expired or not yet
// valid CA is refused.
func ReadCA(path string, now time.Time) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	found := false
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := inValidity(c, now); err != nil {
			return nil, fmt.Errorf("%s: CA %q %w", path, c.Subject.CommonName, err)
		}
		pool.AddCert(c)
		found = true
	}
	if !found {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return pool, nil
}

// ReadKeyPair reads a hub's certificate and key (the key file only its
// owner may read) and checks that the certificate is valid now and signed
// by the fleet CA in pool.
func ReadKeyPair(certPath, keyPath string, pool *x509.CertPool, now time.Time) (tls.Certificate, error) {
	if fi, err := os.Stat(keyPath); err != nil {
		return tls.Certificate{}, err
	} else if fi.Mode().Perm()&0o077 != 0 {
		return tls.Certificate{}, fmt.Errorf("%s is readable by others (mode %04o): chmod 600 it", keyPath, fi.Mode().Perm())
	}
	kp, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(kp.Certificate[0])
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", certPath, err)
	}
	if err := inValidity(leaf, now); err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: certificate %q %w", certPath, leaf.Subject.CommonName, err)
	}
	if pool != nil {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return tls.Certificate{}, fmt.Errorf("%s: not signed by the fleet CA: %w", certPath, err)
		}
	}
	kp.Leaf = leaf
	return kp, nil
}

func inValidity(c *x509.Certificate, now time.Time) error {
	switch {
	case now.After(c.NotAfter):
		return fmt.Errorf("expired on %s (run promcp-device fleet init for a new fleet, or renew it)", c.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(c.NotBefore):
		return fmt.Errorf("is not valid before %s (check the clock)", c.NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

// ServerTLS is a hub's TLS configuration for its client and leaf ports:
// its certificate; clients authenticate with their nkeys, not with a
// certificate.
func ServerTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// ClusterTLS is a hub's TLS configuration for its cluster routes, both
// ways: a route must present a certificate the fleet CA signed (only hubs
// have one), and the member verifies the routes it dials likewise.
func ClusterTLS(cert tls.Certificate, pool *x509.CertPool) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

// ClientTLS is a gateway's TLS configuration for its link to the hub: the
// hub's certificate must chain to the fleet CA.
func ClientTLS(pool *x509.CertPool) *tls.Config {
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// ErrExists is returned when init or add-gateway would overwrite a file.
var ErrExists = errors.New("already exists (refusing to overwrite)")
