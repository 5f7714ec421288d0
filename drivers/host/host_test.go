package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/promcp/promcp-device/drivers"
)

// These run on any machine: the names do not exist on a Raspberry Pi either.

func TestHostI2CUnavailable(t *testing.T) {
	h := New(nil)
	const name = "promcp-no-such-bus"
	b, err := h.I2C(t.Context(), name)
	if err == nil {
		b.Close()
		t.Fatalf("I2C(%q) = nil error, want drivers.ErrUnavailable", name)
	}
	if !errors.Is(err, drivers.ErrUnavailable) {
		t.Errorf("I2C(%q) = %v, want drivers.ErrUnavailable", name, err)
	}
	if !strings.Contains(err.Error(), `"`+name+`"`) {
		t.Errorf("I2C(%q) = %q, want the bus named", name, err)
	}
}

func TestHostPinUnavailable(t *testing.T) {
	h := New(nil)
	const name = "PROMCP_NO_SUCH_PIN"
	_, err := h.Pin(t.Context(), name)
	if !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("Pin(%q) = %v, want drivers.ErrUnavailable", name, err)
	}
	if !strings.Contains(err.Error(), `"`+name+`"`) {
		t.Errorf("Pin(%q) = %q, want the pin named", name, err)
	}
}
