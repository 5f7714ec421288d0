package console

import (
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/promcp/promcp-device/approval"
	"github.com/promcp/promcp-device/audit"
)

// An unknown name is checked against a hash of the file's highest cost, so
// that it costs as much as a wrong password: the time of the answer does
// not tell whether the account exists.
func TestUnknownNameCostsAsMuch(t *testing.T) {
	low, _ := HashPassword("ann-passphrase", MinCost)
	high, _ := HashPassword("bea-passphrase", MinCost+2)
	u, err := ParseUsers("users.txt", strings.NewReader("ann viewer "+low+"\nbea supervisor "+high+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, ok, hash := u.find("nobody")
	if cost, err := bcrypt.Cost(hash); ok || err != nil || cost != MinCost+2 {
		t.Fatalf("find(unknown) = %v, a hash of cost %d (%v); want not found, compared with a hash of cost %d", ok, cost, err, MinCost+2)
	}
	if _, ok, h := u.find("bea"); !ok || string(h) != high {
		t.Fatalf("find(bea) = %v, %q; want her own hash", ok, h)
	}
}

// The audit view says who approved and how; the record's caller column
// says who made the call.
func TestApprovedText(t *testing.T) {
	for _, tc := range []struct {
		a    audit.Approval
		want string
	}{
		{audit.Approval{By: "maria", Method: approval.ViaOutOfBand, ID: "console-079D198F6222"}, "maria in the console"},
		{audit.Approval{By: "maria", Method: approval.ViaOutOfBand, ID: "4f2a9c"}, "maria (approve token)"},
		{audit.Approval{By: "agent", Method: approval.ViaElicitation}, "agent's MCP client (elicitation)"},
		{audit.Approval{By: "(the caller's MCP client)", Method: approval.ViaElicitation}, "(the caller's MCP client) (elicitation)"},
	} {
		if got := approvedText(tc.a); got != tc.want {
			t.Errorf("approvedText(%+v) = %q, want %q", tc.a, got, tc.want)
		}
	}
}
