package approval_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/approval/ledgertest"
)

func TestVerify(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s, err := approval.NewSigner([]byte("0123456789abcdef0123"))
	if err != nil {
		t.Fatal(err)
	}
	tok := s.Issue(approval.Grant{Tool: "do_set_fan_speed", Value: approval.Canonical(95), Key: "k1", Expires: now.Add(10 * time.Minute)})
	other, _ := approval.NewSigner([]byte("fedcba9876543210fedc"))
	tests := []struct {
		name  string
		s     *approval.Signer
		token string
		tool  string
		value any
		key   string
		at    time.Time
		want  error
	}{
		{"valid", s, tok, "do_set_fan_speed", 95.0, "k1", now, nil},
		{"other value", s, tok, "do_set_fan_speed", 96.0, "k1", now, approval.ErrMismatch},
		{"other key", s, tok, "do_set_fan_speed", 95.0, "k2", now, approval.ErrMismatch},
		{"other tool", s, tok, "do_set_heater", 95.0, "k1", now, approval.ErrMismatch},
		{"expired", s, tok, "do_set_fan_speed", 95.0, "k1", now.Add(11 * time.Minute), approval.ErrExpired},
		{"other key file", other, tok, "do_set_fan_speed", 95.0, "k1", now, approval.ErrSignature},
		{"altered", s, strings.Replace(tok, tok[3:4], "x", 1), "do_set_fan_speed", 95.0, "k1", now, nil},
		{"garbage", s, "not-a-token", "do_set_fan_speed", 95.0, "k1", now, approval.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.s.Verify(tc.token, tc.tool, tc.value, tc.key, tc.at)
			if tc.name == "altered" {
				if err == nil {
					t.Fatal("an altered token verified")
				}
				return
			}
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMemoryLedger(t *testing.T) {
	ledgertest.Run(t, func(*testing.T) approval.Ledger { return approval.NewLedger() })
}

func TestLoadKeyRefusesMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approval.key")
	if _, err := approval.LoadKey(path); !errors.Is(err, approval.ErrNoKey) {
		t.Fatalf("LoadKey(missing) = %v, want ErrNoKey", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadKey created %s", path)
	}
	k, err := approval.LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := approval.LoadKey(path)
	if err != nil || string(k) != string(k2) {
		t.Fatalf("LoadKey = %x, %v; want the key LoadOrCreateKey wrote", k2, err)
	}
}

// A token names the gateway it was issued for: a gateway sharing the
// approval key refuses it, saying for which gateway it was issued, and
// the gateway it names accepts it.
func TestVerifyBindsGateway(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	shared, err := approval.NewSigner([]byte("a key two gateways share"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := shared.For("greenhouse-a"), shared.For("greenhouse-b")
	tok := a.Issue(approval.Grant{Tool: "do_set_fan_speed", Value: approval.Canonical(48), Key: "k1", Expires: now.Add(time.Minute)})
	if _, err := b.Verify(tok, "do_set_fan_speed", 48.0, "k1", now); !errors.Is(err, approval.ErrOtherGateway) ||
		!strings.Contains(err.Error(), `issued for gateway "greenhouse-a", this is "greenhouse-b"`) {
		t.Fatalf("gateway B verifying A's token: %v, want ErrOtherGateway naming both", err)
	}
	if _, err := shared.Verify(tok, "do_set_fan_speed", 48.0, "k1", now); !errors.Is(err, approval.ErrOtherGateway) {
		t.Fatalf("a signer for no gateway verifying A's token: %v, want ErrOtherGateway", err)
	}
	g, err := a.Verify(tok, "do_set_fan_speed", 48.0, "k1", now)
	if err != nil || g.Gateway != "greenhouse-a" || g.Format != approval.Format {
		t.Fatalf("gateway A verifying its own token: %+v, %v", g, err)
	}
}

// A token of the old format (signed, valid, but naming no gateway) is
// refused with a message that says to issue a new one, not taken for a
// token of every gateway.
func TestVerifyRefusesOldFormat(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	key := []byte("a key two gateways share")
	s, err := approval.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	// As the previous version's Issue wrote it: the grant without v and gw.
	payload, _ := json.Marshal(map[string]any{"tool": "do_set_fan_speed", "value": 48, "key": "k1",
		"exp": now.Add(time.Minute), "id": "0123456789abcdef01234567", "by": "maria"})
	h := hmac.New(sha256.New, key)
	h.Write(payload)
	old := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	if _, err := s.Open(old); err != nil {
		t.Fatalf("the old token's signature does not check (the test does not build it as the old version did): %v", err)
	}
	for _, v := range []*approval.Signer{s, s.For("greenhouse-a")} {
		_, err := v.Verify(old, "do_set_fan_speed", 48.0, "k1", now)
		if !errors.Is(err, approval.ErrOldFormat) || !strings.Contains(err.Error(), "issue a new one") {
			t.Fatalf("an old-format token on gateway %q: %v, want ErrOldFormat saying to issue a new one", v.Gateway(), err)
		}
	}
}

// An emergency override is one tool for its ttl, never longer than the
// policy's; it is not an approval and an approval is not one.
func TestVerifyOverride(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s0, err := approval.NewSigner([]byte("0123456789abcdef0123"))
	if err != nil {
		t.Fatal(err)
	}
	s := s0.For("gw1")
	ovr := s.Issue(approval.Grant{Tool: "do_setpoint_0", Override: true, Issued: now, Expires: now.Add(5 * time.Minute), By: "ana"})
	long := s.Issue(approval.Grant{Tool: "do_setpoint_0", Override: true, Issued: now, Expires: now.Add(time.Hour)})
	appr := s.Issue(approval.Grant{Tool: "do_setpoint_0", Value: approval.Canonical(22.5), Key: "k", Issued: now, Expires: now.Add(time.Minute)})
	tests := []struct {
		name  string
		s     *approval.Signer
		token string
		tool  string
		at    time.Time
		want  error
	}{
		{"valid", s, ovr, "do_setpoint_0", now.Add(4 * time.Minute), nil},
		{"lapsed", s, ovr, "do_setpoint_0", now.Add(5 * time.Minute), approval.ErrExpired},
		{"other tool", s, ovr, "do_fan_mode_0", now, approval.ErrMismatch},
		{"other gateway", s0.For("gw2"), ovr, "do_setpoint_0", now, approval.ErrOtherGateway},
		{"longer than the policy's ttl", s, long, "do_setpoint_0", now, approval.ErrExpired},
		{"an approval", s, appr, "do_setpoint_0", now, approval.ErrKind},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.s.VerifyOverride(tc.token, tc.tool, 5*time.Minute, tc.at)
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("VerifyOverride = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := s.Verify(ovr, "do_setpoint_0", nil, "", now); !errors.Is(err, approval.ErrKind) {
		t.Errorf("Verify(override) = %v, want ErrKind", err)
	}
	if !s.IsOverride(ovr) || s.IsOverride(appr) {
		t.Error("IsOverride does not tell an override from an approval")
	}
}
