package hass

// Test access to the key derivation.
type Keyer = keyer

func NewKeyer() *Keyer                          { return newKeyer() }
func (k *keyer) NewConnection()                 { k.newConnection() }
func (k *keyer) Key(id uint16, dup bool) string { return k.key(id, dup) }
