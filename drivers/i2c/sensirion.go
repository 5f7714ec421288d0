package i2c

import (
	"fmt"

	"github.com/promcp/promcp-device/drivers"
)

// sensirionWords checks and decodes the CRC-protected words of a Sensirion
// response (SHT4x, SCD4x): each a big-endian word followed by its [CRC8].
// what names the words, for the error.
func sensirionWords(b []byte, what ...string) ([]uint16, error) {
	if len(b) != 3*len(what) {
		return nil, fmt.Errorf("%d bytes for %d words", len(b), len(what))
	}
	ws := make([]uint16, len(what))
	for i := range what {
		p := b[3*i : 3*i+3]
		if got, want := p[2], CRC8(p[:2]); got != want {
			return nil, fmt.Errorf("%s: %w: crc 0x%02x, want 0x%02x", what[i], drivers.ErrCRC, got, want)
		}
		ws[i] = uint16(p[0])<<8 | uint16(p[1])
	}
	return ws, nil
}

// SensirionWord encodes v as a Sensirion chip sends it: MSB, LSB, CRC.
func SensirionWord(v uint16) []byte {
	b := []byte{byte(v >> 8), byte(v)}
	return append(b, CRC8(b))
}
