//go:build !nofleet

package trust

import (
	"crypto/x509"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// NkeyOption authenticates a client connection with kp: the client signs
// the server's nonce; the seed never leaves the node.
func NkeyOption(kp nkeys.KeyPair) nats.Option {
	pub, _ := kp.PublicKey()
	return nats.Nkey(pub, kp.Sign)
}

// InboxOption gives node's connection the inbox prefix its permissions
// let it receive replies on: _INBOX.<node>.
func InboxOption(node string) nats.Option {
	return nats.CustomInboxPrefix("_INBOX." + node)
}

// ClientOptions are the options of node's connection to a hub: TLS with
// the hub's certificate verified against the fleet CA, its nkey, its own
// inbox prefix.
func ClientOptions(node string, kp nkeys.KeyPair, ca *x509.CertPool) []nats.Option {
	return []nats.Option{nats.Secure(ClientTLS(ca)), NkeyOption(kp), InboxOption(node)}
}
