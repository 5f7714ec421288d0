package servertest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is a JWT issuer for tests: one ECDSA P-256 signing key, named by
// its key id.
type Issuer struct {
	URL string // the iss of its tokens
	Key *ecdsa.PrivateKey
	KID string
}

// NewIssuer returns an issuer with a fresh key.
func NewIssuer(t testing.TB, iss, kid string) *Issuer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Issuer{URL: iss, Key: k, KID: kid}
}

// JWKS returns the JWK Set of the issuers' public keys.
func JWKS(t testing.TB, issuers ...*Issuer) []byte {
	t.Helper()
	var set jose.JSONWebKeySet
	for _, is := range issuers {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &is.Key.PublicKey, KeyID: is.KID, Algorithm: "ES256", Use: "sig"})
	}
	data, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Token returns a token of the issuer with claims (iss is added unless
// claims has one).
func (is *Issuer) Token(t testing.TB, claims map[string]any) string {
	t.Helper()
	return SignJWT(t, is.Key, jose.ES256, is.KID, withIss(claims, is.URL))
}

func withIss(claims map[string]any, iss string) map[string]any {
	out := map[string]any{"iss": iss}
	for k, v := range claims {
		out[k] = v
	}
	return out
}

// SignJWT signs claims with key and algorithm alg, naming kid.
func SignJWT(t testing.TB, key crypto.Signer, alg jose.SignatureAlgorithm, kid string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// CA is a certificate authority for tests.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte
}

// NewCA returns a fresh CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	k := newKey(t)
	tpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &CA{Cert: c, Key: k, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Leaf is a certificate the CA issued, with its key, in PEM too.
type Leaf struct {
	Cert            *x509.Certificate
	Key             *ecdsa.PrivateKey
	CertPEM, KeyPEM []byte
}

// LeafOptions shape a certificate: its validity, usage, names and roles.
type LeafOptions struct {
	CN        string
	OU        []string
	URIs      []string // such as promcp:role:operator
	DNS       []string
	IPs       []net.IP
	NotBefore time.Time // zero: an hour ago
	NotAfter  time.Time // zero: in a day
	Server    bool      // for server authentication (default: client)
}

// Issue returns a certificate the CA signs.
func (ca *CA) Issue(t testing.TB, o LeafOptions) *Leaf {
	t.Helper()
	k := newKey(t)
	tpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: o.CN, OrganizationalUnit: o.OU},
		NotBefore: o.NotBefore, NotAfter: o.NotAfter, DNSNames: o.DNS, IPAddresses: o.IPs, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if o.Server {
		tpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	if tpl.NotBefore.IsZero() {
		tpl.NotBefore = time.Now().Add(-time.Hour)
	}
	if tpl.NotAfter.IsZero() {
		tpl.NotAfter = time.Now().Add(24 * time.Hour)
	}
	for _, s := range o.URIs {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		tpl.URIs = append(tpl.URIs, u)
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.Cert, &k.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return &Leaf{Cert: c, Key: k, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})}
}

// WriteFiles writes the leaf's certificate and key into dir as
// NAME.crt and NAME.key (mode 0600), and returns their paths.
func (l *Leaf) WriteFiles(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, l.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, l.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
