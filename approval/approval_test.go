package approval_test

import (
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
