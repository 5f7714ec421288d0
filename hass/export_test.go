package hass

import "github.com/eclipse/paho.golang/paho"

// Test access to the key derivation.
type Keyer = keyer

func NewKeyer() *Keyer                          { return newKeyer() }
func (k *keyer) NewConnection()                 { k.newConnection() }
func (k *keyer) Key(id uint16, dup bool) string { return k.key(id, dup) }

// Received hands the bridge a message as the MQTT client would.
func (b *Bridge) Received(pr paho.PublishReceived) { b.received(pr) }
