package main

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/server"
)

// identity makes the verifiers of the policy's identity providers (PhysMCP
// §6 identity.providers): the JWT providers join the tokens (a tokens
// value is made for them when --tokens is not given), the mTLS providers
// are returned, for the HTTP listener to ask for client certificates. It
// refuses an mTLS provider without TLS, and a non-loopback --http with no
// way to tell callers apart.
func (f *serveFlags) identity(log *slog.Logger, pol *manifests.Policy, tokens *server.Tokens) (*server.Tokens, []*server.CertVerifier, error) {
	var certs []*server.CertVerifier
	if pol != nil && pol.Identity != nil {
		for _, n := range pol.Notes {
			log.Warn("policy: " + n.String())
		}
		if f.httpAddr == "" {
			// Not even opened: a CA file or JWKS that only an HTTP
			// listener would read does not stop a stdio gateway.
			log.Info("the policy's identity providers apply to --http only; over stdio every call is made as --role", "role", f.role)
			return tokens, nil, nil
		}
		var jwts []*server.JWTVerifier
		for _, p := range pol.Identity.Providers {
			switch p.Type {
			case manifests.ProviderJWT:
				v, err := server.NewJWTVerifier(server.JWTConfig{Issuer: p.Issuer, Audience: p.Audience,
					JWKSFile: pol.Path(p.JWKSFile), JWKSURL: p.JWKSURL, Refresh: p.JWKSRefresh, Algorithms: p.Algorithms,
					RolesClaim: p.RolesClaim, NameClaim: p.NameClaim, Roles: pol.Roles, Leeway: p.Leeway})
				if err != nil {
					return nil, nil, failErr(fmt.Errorf("%s: identity provider: %w", p.Pos, err), false)
				}
				if err := v.Err(); err != nil {
					log.Warn("jwt provider has no keys yet: its tokens are refused until they are fetched", "issuer", p.Issuer, "at", p.Pos.String(), "err", err)
				}
				jwts = append(jwts, v)
				log.Info("identity provider", "type", "jwt", "issuer", p.Issuer, "audience", p.Audience, "at", p.Pos.String())
			case manifests.ProviderMTLS:
				v, err := server.NewCertVerifier(server.CertConfig{CAFile: pol.Path(p.CACertPath), RoleFrom: p.RoleFrom, NameFrom: p.NameFrom, Roles: pol.Roles})
				if err != nil {
					return nil, nil, failErr(fmt.Errorf("%s: identity provider: %w", p.Pos, err), false)
				}
				certs = append(certs, v)
				log.Info("identity provider", "type", "mtls", "ca", pol.Path(p.CACertPath), "at", p.Pos.String())
			}
		}
		if len(jwts) > 0 {
			if tokens == nil {
				tokens = server.NewTokens()
			}
			tokens.AcceptJWT(jwts...)
		}
	}
	if len(certs) > 0 && f.httpAddr != "" && f.tlsCert == "" {
		return nil, nil, usageErr("the policy declares an mtls identity provider: serve HTTPS with --tls-cert and --tls-key (client certificates are asked for over TLS only)")
	}
	if f.console && tokens == nil && len(certs) > 0 {
		return nil, nil, usageErr("--console signs in with a bearer token: give --tokens, or a jwt identity provider, beside the mtls provider")
	}
	if f.httpAddr != "" && tokens == nil && len(certs) == 0 {
		if host, _, err := net.SplitHostPort(bindAddr(f.httpAddr)); err == nil && !isLoopback(host) {
			return nil, nil, usageErr("refusing to serve --http %s without --tokens: anyone who reaches a non-loopback address could actuate.\n"+
				"  Create a token with: promcp-device token add --tokens tokens.txt --name NAME --role operator\n"+
				"  then serve with --tokens tokens.txt (and --tls-cert/--tls-key), or bind 127.0.0.1;\n"+
				"  or declare identity providers (jwt, mtls) in the policy.", f.httpAddr)
		}
	}
	return tokens, certs, nil
}
