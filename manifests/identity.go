package manifests

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
)

// Identity is a policy's identity block (PhysMCP §6 identity): the
// providers that say who a caller over HTTP is, beside the tokens file.
type Identity struct {
	Providers []IdentityProvider
}

// The types of identity provider.
const (
	ProviderJWT  = "jwt"
	ProviderMTLS = "mtls"
)

// IdentityProvider is one identity provider. A jwt provider accepts bearer
// JWTs of Issuer for Audience, verified with the keys of JWKSFile and/or
// JWKSURL; an mtls provider accepts client certificates issued by the CA
// of CACertPath. Relative paths are relative to the policy file (see
// Policy.Path).
type IdentityProvider struct {
	Type string
	// Pos is where the provider is declared.
	Pos Position

	Issuer, Audience  string
	JWKSFile, JWKSURL string
	// JWKSRefresh is how often JWKSURL is fetched again (0: the default).
	JWKSRefresh time.Duration
	// Algorithms allowed (nil: the default RS256, ES256, EdDSA).
	Algorithms []string
	// RolesClaim holds the role (a dotted path; "": roles); NameClaim
	// names the caller ("": sub).
	RolesClaim, NameClaim string
	// Leeway is the clock skew allowed on exp and nbf (0: 30 s).
	Leeway time.Duration

	CACertPath string
	// RoleFrom is uri (a URI SAN promcp:role:NAME, the default) or ou;
	// NameFrom is cn (the default), dns, email or uri.
	RoleFrom, NameFrom string
}

// Note is something a file declares that is accepted but not (yet)
// honoured in full: lint prints it as a warning, serve logs it.
type Note struct {
	Pos   Position
	Field string
	Msg   string
}

func (n Note) String() string { return n.Pos.String() + ": " + n.Field + ": " + n.Msg }

var (
	identityKeys = []string{"providers"}
	providerKeys = []string{"type", "issuer", "audience", "jwks_file", "jwks_url", "jwks_refresh", "algorithms",
		"roles_claim", "name_claim", "leeway", "ca_cert_path", "role_from", "name_from"}
	providerFields = map[string][]string{
		ProviderJWT:  {"issuer", "audience", "jwks_file", "jwks_url", "jwks_refresh", "algorithms", "roles_claim", "name_claim", "leeway"},
		ProviderMTLS: {"ca_cert_path", "role_from", "name_from"},
	}
	// jwtAlgorithms are the signature algorithms a provider may allow
	// (server.JWTAlgorithms): asymmetric only.
	jwtAlgorithms = []string{"RS256", "PS256", "ES256", "ES384", "EdDSA"}
	claimPath     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_:/-]+(\.[A-Za-z0-9_:/-]+)*$`) })
)

// identityNote says what of §6 identity is not honoured yet.
const identityNote = "a client certificate does not travel with a routed fleet call (a JWT does, and the gateway that owns " +
	"the hardware verifies it itself): a caller proved by certificate at another node is that node's claim, capped by the route; " +
	"the fleet endpoint and the console accept bearer tokens and JWTs, not client certificates"

// identity decodes the identity block at key k, and notes what of it is
// not honoured yet.
func (o obj) identity(k string, notes *[]Note) *Identity {
	id, ok := o.sub(k, identityKeys)
	if !ok {
		return nil
	}
	out := &Identity{Providers: list(id, "providers", providerKeys, obj.provider)}
	id.require("providers", "a list of providers, such as [{type: jwt, issuer: ..., audience: ..., jwks_file: ...}]")
	out.Providers = slices.DeleteFunc(out.Providers, func(p IdentityProvider) bool {
		if p.Type != ProviderJWT || p.JWKSFile != "" || p.JWKSURL != "" {
			return false
		}
		// Only a PhysMCP file gets here (ours requires the keys): the
		// spec has no key for them.
		*notes = append(*notes, Note{Pos: p.Pos, Field: id.at("providers"), Msg: fmt.Sprintf(
			"the jwt provider of %s names no keys (PhysMCP has no key for them): its JWTs are refused until the policy, converted with `promcp-device convert`, gives jwks_file or jwks_url", p.Issuer)})
		return true
	})
	if len(out.Providers) > 0 {
		pos := id.d.at(o.at(k))
		pos.File = id.d.p.file
		*notes = append(*notes, Note{Pos: pos, Field: o.at(k), Msg: identityNote})
	}
	return out
}

func (o obj) provider(p *IdentityProvider) {
	p.Pos = o.d.at(o.path)
	p.Pos.File = o.d.p.file
	if !enum(o, "type", &p.Type, []string{ProviderJWT, ProviderMTLS}, true) {
		return
	}
	for _, k := range providerKeys[1:] {
		if o.has(k) && !slices.Contains(providerFields[p.Type], k) {
			o.add(k, ErrNotAllowed, "in a %s provider (want %s)", p.Type, oneOf(providerFields[p.Type]))
		}
	}
	if p.Type == ProviderMTLS {
		p.CACertPath = o.requiredStr("ca_cert_path", "the CA certificate (PEM) that issues the clients' certificates")
		enum(o, "role_from", &p.RoleFrom, []string{"uri", "ou"}, false)
		enum(o, "name_from", &p.NameFrom, []string{"cn", "dns", "email", "uri"}, false)
		return
	}
	p.Issuer = o.requiredStr("issuer", `the tokens' iss, such as "https://auth.example.com"`)
	p.Audience = o.requiredStr("audience", `the aud the tokens must carry, such as "physmcp-mesh"`)
	p.JWKSFile, p.JWKSURL = o.str("jwks_file"), o.str("jwks_url")
	if p.JWKSFile == "" && p.JWKSURL == "" && !o.d.physmcp && !o.d.bad[o.at("jwks_file")] && !o.d.bad[o.at("jwks_url")] {
		o.d.add(o.path, ErrMissing, "jwks_file or jwks_url (want the issuer's public keys: a JWK Set file, or the URL the issuer publishes them at)")
	}
	if p.JWKSURL != "" && !safeJWKSURL(p.JWKSURL) {
		o.add("jwks_url", ErrNotAllowed, "%q (want an https URL; plain http only on loopback)", p.JWKSURL)
	}
	p.JWKSRefresh = o.dur("jwks_refresh")
	if o.has("jwks_refresh") && p.JWKSRefresh < time.Minute {
		o.add("jwks_refresh", ErrRange, "%s (want 1m or more)", p.JWKSRefresh)
	}
	for i, a := range o.strs("algorithms") {
		switch {
		case strings.EqualFold(a, "none") || strings.HasPrefix(strings.ToUpper(a), "HS"):
			o.d.add(index(o.at("algorithms"), i), ErrNotAllowed, "%q (never none or HMAC: want %s)", a, oneOf(jwtAlgorithms))
		case !slices.Contains(jwtAlgorithms, a):
			o.d.add(index(o.at("algorithms"), i), ErrUnknownValue, "%q (want %s)", a, oneOf(jwtAlgorithms))
		default:
			p.Algorithms = append(p.Algorithms, a)
		}
	}
	for _, k := range []string{"roles_claim", "name_claim"} {
		if s := o.str(k); s != "" && !claimPath().MatchString(s) {
			o.add(k, ErrBadName, ": %q (want a claim name, or a dotted path such as realm_access.roles)", s)
		}
	}
	p.RolesClaim, p.NameClaim = o.str("roles_claim"), o.str("name_claim")
	p.Leeway = o.dur("leeway")
	if p.Leeway < 0 || p.Leeway > 5*time.Minute {
		o.add("leeway", ErrRange, "%s (want 0s to 5m)", p.Leeway)
	}
}

// safeJWKSURL: https, or http on a loopback host.
func safeJWKSURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return u.Scheme == "https" || u.Scheme == "http" && (host == "localhost" || ip != nil && ip.IsLoopback())
}

// Path resolves a path the policy names (a JWKS file, a CA) against the
// policy file's directory.
func (pol *Policy) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(pol.File), p)
}

// identityItem is the identity block in the policy format, for convert.
func identityItem(id *Identity) yaml.MapSlice {
	var ps []yaml.MapSlice
	for _, p := range id.Providers {
		m := yaml.MapSlice{{Key: "type", Value: p.Type}}
		add := func(k string, v any, set bool) {
			if set {
				m = append(m, yaml.MapItem{Key: k, Value: v})
			}
		}
		add("issuer", p.Issuer, p.Issuer != "")
		add("audience", p.Audience, p.Audience != "")
		add("jwks_file", p.JWKSFile, p.JWKSFile != "")
		add("jwks_url", p.JWKSURL, p.JWKSURL != "")
		add("jwks_refresh", FormatDuration(p.JWKSRefresh), p.JWKSRefresh > 0)
		add("algorithms", p.Algorithms, len(p.Algorithms) > 0)
		add("roles_claim", p.RolesClaim, p.RolesClaim != "")
		add("name_claim", p.NameClaim, p.NameClaim != "")
		add("leeway", FormatDuration(p.Leeway), p.Leeway > 0)
		add("ca_cert_path", p.CACertPath, p.CACertPath != "")
		add("role_from", p.RoleFrom, p.RoleFrom != "")
		add("name_from", p.NameFrom, p.NameFrom != "")
		ps = append(ps, m)
	}
	return yaml.MapSlice{{Key: "providers", Value: ps}}
}
