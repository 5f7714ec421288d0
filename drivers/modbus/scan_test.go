package modbus_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/manifests"
)

// TestScan finds the simulated units and their readable runs over RTU on
// TCP (where an absent unit is silent) and Modbus TCP (where the gateway
// answers exception 11 for it), and never writes.
func TestScan(t *testing.T) {
	for _, k := range []manifests.BusKind{manifests.BusModbusRTUTCP, manifests.BusModbusTCP} {
		t.Run(string(k), func(t *testing.T) {
			w, _ := world(t, k)
			line, _ := serve(t, w, k, modbus.Config{Timeout: 50 * time.Millisecond, BreakerThreshold: 1 << 30})
			slave, _ := w.ModbusSlave("dev1")
			before, _ := slave.Get("uint16_ABCD")
			found, err := line.Scan(t.Context(), modbus.ScanConfig{Units: []uint8{1, 2, 3}, First: 0, Count: 6, Pause: time.Microsecond})
			if err != nil {
				t.Fatal(err)
			}
			want := "[{1 [holding 0 holding 4 input 0 coil 0 discrete 0]} {2 [holding 0 holding 4 input 0 coil 0 discrete 0]}]"
			if got := fmt.Sprint(found); got != want {
				t.Fatalf("Scan = %s, want %s", got, want)
			}
			if after, _ := slave.Get("uint16_ABCD"); after != before {
				t.Fatalf("scan changed a register: %v -> %v", before, after)
			}
		})
	}
}
