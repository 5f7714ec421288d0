package main

// The HTTP security table, through real HTTP clients against the binary.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// tokensFile writes a tokens file with an operator and a viewer and
// returns it with their tokens, made by `token add`.
func tokensFile(t *testing.T) (file, operator, viewer string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "tokens.txt")
	operator, _, code := runCLI(t, "token", "add", "--tokens", file, "--name", "olga", "--role", "operator")
	if code != 0 {
		t.Fatalf("token add: exit %d", code)
	}
	viewer, _, code = runCLI(t, "token", "add", "--tokens", file, "--name", "vera", "--role", "viewer")
	if code != 0 {
		t.Fatalf("token add: exit %d", code)
	}
	data, _ := os.ReadFile(file)
	if strings.Contains(string(data), strings.TrimSpace(operator)) {
		t.Fatal("the tokens file holds a token in clear")
	}
	return file, strings.TrimSpace(operator), strings.TrimSpace(viewer)
}

func post(t *testing.T, hc *http.Client, url string, header map[string]string, body io.Reader) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

func TestHTTPSecurity(t *testing.T) {
	file, operator, viewer := tokensFile(t)
	state := t.TempDir()
	url := startServe(t, "--manifest", labBench, "--tokens", file, "--state", state, "--allow-origin", "https://agent.example").url
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

	statuses := []struct {
		name       string
		header     map[string]string
		body       io.Reader
		wantStatus int
	}{
		{"no token", nil, strings.NewReader(initBody), http.StatusUnauthorized},
		{"bad token", bearer("pmd_not-a-token"), strings.NewReader(initBody), http.StatusUnauthorized},
		{"basic auth instead of bearer", map[string]string{"Authorization": "Basic b2xnYTpwdw=="}, strings.NewReader(initBody), http.StatusUnauthorized},
		{"operator token", bearer(operator), strings.NewReader(initBody), http.StatusOK},
		{"viewer token", bearer(viewer), strings.NewReader(initBody), http.StatusOK},
		{"foreign Origin with a valid token", map[string]string{"Authorization": "Bearer " + operator, "Origin": "https://evil.example"}, strings.NewReader(initBody), http.StatusForbidden},
		{"allowed Origin with a valid token", map[string]string{"Authorization": "Bearer " + operator, "Origin": "https://agent.example"}, strings.NewReader(initBody), http.StatusOK},
		{"loopback Origin with a valid token", map[string]string{"Authorization": "Bearer " + operator, "Origin": "http://localhost:5173"}, strings.NewReader(initBody), http.StatusOK},
		{"allowed Origin without a token", map[string]string{"Origin": "https://agent.example"}, strings.NewReader(initBody), http.StatusUnauthorized},
		{"oversized body (2 MiB)", bearer(operator), bytes.NewReader(bytes.Repeat([]byte(" "), 2<<20)), http.StatusRequestEntityTooLarge},
	}
	for _, tc := range statuses {
		t.Run(tc.name, func(t *testing.T) {
			res := post(t, http.DefaultClient, url, tc.header, tc.body)
			if res.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.wantStatus)
			}
			if tc.wantStatus == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without a Bearer WWW-Authenticate challenge: %q", res.Header.Get("WWW-Authenticate"))
			}
		})
	}

	t.Run("viewer on do_* is refused in the typed body", func(t *testing.T) {
		c := mcpClient(t, url, viewer)
		body, err := callDo(c, t, "v-1", 50)
		if err != nil || body["status"] != "failed" || body["permission"] != "permission_insufficient" {
			t.Fatalf("viewer do_set_light_level = %v, %v; want failed permission_insufficient", body, err)
		}
		res, err := c.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_light_level", Arguments: map[string]any{}}})
		if err != nil || res.IsError {
			t.Fatalf("viewer read_light_level = %v, %v; want a reading", res, err)
		}
	})
	t.Run("operator on do_* acts, and the audit names the caller", func(t *testing.T) {
		c := mcpClient(t, url, operator)
		body, err := callDo(c, t, "o-1", 50)
		if err != nil || body["status"] != "success" {
			t.Fatalf("operator do_set_light_level = %v, %v; want success", body, err)
		}
		who := map[string]string{}
		for _, r := range auditRecords(t, state) {
			who[r.Event+"/"+r.Key] = r.Caller + "/" + r.Role
		}
		if who["refused/v-1"] != "vera/viewer" || who["attempt/o-1"] != "olga/operator" || who["result/o-1"] != "olga/operator" {
			t.Fatalf("audit callers = %v, want vera's refusal and olga's attempt and result", who)
		}
	})
}

func TestHTTPRefusesNonLoopbackWithoutTokens(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		_, stderr, code := runCLI(t, "serve", "--sim", "--manifest", labBench, "--http", addr)
		if code != 2 || !strings.Contains(stderr, "refusing to serve") || !strings.Contains(stderr, "--tokens") {
			t.Fatalf("serve --http %s without tokens: exit %d, %q; want exit 2 and a message naming --tokens", addr, code, stderr)
		}
	}
	file, operator, _ := tokensFile(t)
	// With tokens a non-loopback bind starts.
	cmd := startServeAt(t, "0.0.0.0:0", "--manifest", labBench, "--tokens", file)
	port := cmd.url[strings.LastIndex(cmd.url, ":")+1 : strings.LastIndex(cmd.url, "/mcp")]
	if res := post(t, http.DefaultClient, "http://127.0.0.1:"+port+"/mcp", map[string]string{"Authorization": "Bearer " + operator}, strings.NewReader(initBody)); res.StatusCode != 200 {
		t.Fatalf("non-loopback bind with tokens: status %d", res.StatusCode)
	}
}

func TestHTTPReadOnly(t *testing.T) {
	url := startServe(t, "--manifest", labBench, "--read-only").url
	c := mcpClient(t, url, "")
	list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if strings.HasPrefix(tool.Name, "do_") {
			t.Fatalf("--read-only serves %s", tool.Name)
		}
	}
	if len(list.Tools) == 0 {
		t.Fatal("--read-only serves nothing")
	}
}

func TestHTTPTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	p := startServe(t, "--manifest", labBench, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(p.url, "https://") {
		t.Fatalf("serve with TLS printed %s, want an https URL", p.url)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if res := post(t, hc, p.url, nil, strings.NewReader(initBody)); res.StatusCode != 200 {
		t.Fatalf("initialize over TLS: status %d", res.StatusCode)
	}
	plain := strings.Replace(p.url, "https://", "http://", 1)
	if res := post(t, http.DefaultClient, plain, nil, strings.NewReader(initBody)); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("plain HTTP to the TLS listener: status %d, want 400", res.StatusCode)
	}
	if _, _, code := runCLI(t, "serve", "--sim", "--manifest", labBench, "--http", "127.0.0.1:0", "--tls-cert", certFile); code != 2 {
		t.Fatalf("--tls-cert without --tls-key: exit %d, want 2", code)
	}
}

// startServeAt is startServe on another address.
func startServeAt(t *testing.T, addr string, args ...string) *serveProc {
	t.Helper()
	// startServe passes --http 127.0.0.1:0 first; a later --http wins.
	return startServe(t, append([]string{"--http", addr}, args...)...)
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// a pool that trusts it.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "promcp-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
