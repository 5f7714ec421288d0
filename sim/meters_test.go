package sim_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/promcp/promcp-device/drivers/modbus"
	"github.com/promcp/promcp-device/manifests/manifesttest"
	"github.com/promcp/promcp-device/sim"
)

// meters is an RS-485 line with the three Modbus profiles on it.
const meters = `
version: 1
gateway: meters
buses: [{name: rs485, kind: modbus_rtu, port: /dev/ttyUSB0}]
devices:
  - {name: flat, bus: rs485, model: modbus, unit_id: 1, profile: eastron_sdm120}
  - {name: mains, bus: rs485, model: modbus, unit_id: 2, profile: eastron_sdm630, sim: {values: {voltage_l2: 232.5}}}
  - {name: relays, bus: rs485, model: modbus, unit_id: 3, profile: relay_board_4}
capabilities:
  - {name: flat_voltage, type: number, unit: V, read: {device: flat, channel: voltage}}
`

// rtu sends one RTU request (CRC appended) to the simulated line and
// returns the whole response frame.
type rtu struct {
	t    *testing.T
	conn net.Conn
}

func newRTU(t *testing.T) (*rtu, *sim.World, func(time.Duration)) {
	t.Helper()
	w, clk := newWorld(t, manifesttest.Parse(t, "meters.yml", meters))
	srv, err := w.ModbusServer("rs485")
	if err != nil {
		t.Fatal(err)
	}
	master, slave := net.Pipe()
	go srv.ServeRTU(slave)
	t.Cleanup(func() { master.Close(); slave.Close(); srv.Close() })
	// A bound on a hung test, never asserted.
	master.SetDeadline(time.Now().Add(2 * time.Minute))
	return &rtu{t: t, conn: master}, w, clk.Advance
}

// ask sends req (without CRC) and reads a response of n bytes (CRC
// included), checking its CRC.
func (r *rtu) ask(req []byte, n int) []byte {
	r.t.Helper()
	if _, err := r.conn.Write(modbus.AppendCRC(append([]byte(nil), req...))); err != nil {
		r.t.Fatal(err)
	}
	res := make([]byte, n)
	if _, err := io.ReadFull(r.conn, res); err != nil {
		r.t.Fatalf("response to % x: %v", req, err)
	}
	if !modbus.CheckCRC(res) {
		r.t.Fatalf("response % x to % x: bad CRC", res, req)
	}
	return res[:n-2]
}

func f32(v float64) []byte { return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(v))) }

// TestEastronKnownFrames: the frames of Eastron's protocol document. The
// request for an SDM120's voltage (input register 30001, function 4, two
// registers) is 01 04 00 00 00 02 71 CB; the twin answers 230.0 V as the
// float32 43 66 00 00, 50 Hz as 42 48 00 00, the site's base load as
// power, and energy integrated on the simulated clock.
func TestEastronKnownFrames(t *testing.T) {
	r, _, advance := newRTU(t)
	if got := modbus.AppendCRC([]byte{0x01, 0x04, 0x00, 0x00, 0x00, 0x02}); !bytes.Equal(got, []byte{0x01, 0x04, 0x00, 0x00, 0x00, 0x02, 0x71, 0xCB}) {
		t.Fatalf("the datasheet's voltage request = % x, want 01 04 00 00 00 02 71 cb", got)
	}
	read := func(unit byte, addr uint16) []byte {
		t.Helper()
		res := r.ask([]byte{unit, 0x04, byte(addr >> 8), byte(addr), 0x00, 0x02}, 9)
		if !bytes.Equal(res[:3], []byte{unit, 0x04, 0x04}) {
			t.Fatalf("unit %d input %#04x: response % x, want %02x 04 04 and four bytes", unit, addr, res, unit)
		}
		return res[3:]
	}
	for _, tc := range []struct {
		what string
		unit byte
		addr uint16
		want []byte
	}{
		{"sdm120 voltage 230.0 V", 1, 0x0000, []byte{0x43, 0x66, 0x00, 0x00}},
		{"sdm120 frequency 50.0 Hz", 1, 0x0046, []byte{0x42, 0x48, 0x00, 0x00}},
		{"sdm120 power 150 W (the base load)", 1, 0x000C, []byte{0x43, 0x16, 0x00, 0x00}},
		{"sdm120 current 150 W / 230 V", 1, 0x0006, f32(sim.MeterBaseLoad / sim.MainsVoltage)},
		{"sdm120 import energy 0 kWh", 1, 0x0048, []byte{0, 0, 0, 0}},
		{"sdm630 voltage L1 230.0 V", 2, 0x0000, []byte{0x43, 0x66, 0x00, 0x00}},
		{"sdm630 voltage L2 232.5 V (sim.values)", 2, 0x0002, []byte{0x43, 0x68, 0x80, 0x00}},
		{"sdm630 power L3 50 W (a third of the load)", 2, 0x0010, []byte{0x42, 0x48, 0x00, 0x00}},
		{"sdm630 total system power 150 W", 2, 0x0034, []byte{0x43, 0x16, 0x00, 0x00}},
	} {
		if got := read(tc.unit, tc.addr); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: % x, want % x", tc.what, got, tc.want)
		}
	}
	advance(2 * time.Hour)
	for _, addr := range []uint16{0x0048, 0x0156} {
		if got, want := read(1, addr), f32(0.3); !bytes.Equal(got, want) {
			t.Errorf("sdm120 input %#04x after 2 h at 150 W = % x (%g kWh), want % x (0.3 kWh)", addr, got,
				math.Float32frombits(binary.BigEndian.Uint32(got)), want)
		}
	}
	// A register the SDM120 map does not have is an exception, as the
	// simulator's gaps are.
	if res := r.ask([]byte{0x01, 0x04, 0x00, 0x02, 0x00, 0x02}, 5); !bytes.Equal(res, []byte{0x01, 0x84, 0x02}) {
		t.Errorf("sdm120 input 0x0002: % x, want the exception 01 84 02", res)
	}
}

// TestRelayBoardKnownFrames: relay n is coil n-1: function 5 switches one
// (FF 00 on, 00 00 off) and echoes the request, function 15 sets several,
// function 1 reads them back, least significant bit first.
func TestRelayBoardKnownFrames(t *testing.T) {
	r, w, _ := newRTU(t)
	if res := r.ask([]byte{0x03, 0x05, 0x00, 0x01, 0xFF, 0x00}, 8); !bytes.Equal(res, []byte{0x03, 0x05, 0x00, 0x01, 0xFF, 0x00}) {
		t.Fatalf("relay2 on: % x, want the echo 03 05 00 01 ff 00", res)
	}
	if res := r.ask([]byte{0x03, 0x01, 0x00, 0x00, 0x00, 0x04}, 6); !bytes.Equal(res, []byte{0x03, 0x01, 0x01, 0x02}) {
		t.Errorf("coils 0..3 after relay2 on: % x, want 03 01 01 02", res)
	}
	if res := r.ask([]byte{0x03, 0x0F, 0x00, 0x00, 0x00, 0x04, 0x01, 0x09}, 8); !bytes.Equal(res, []byte{0x03, 0x0F, 0x00, 0x00, 0x00, 0x04}) {
		t.Fatalf("coils 0..3 := 1001: % x, want 03 0f 00 00 00 04", res)
	}
	if res := r.ask([]byte{0x03, 0x01, 0x00, 0x00, 0x00, 0x04}, 6); !bytes.Equal(res, []byte{0x03, 0x01, 0x01, 0x09}) {
		t.Errorf("coils 0..3 after 1001: % x, want 03 01 01 09", res)
	}
	relays, _ := w.ModbusSlave("relays")
	for name, want := range map[string]bool{"relay1": true, "relay2": false, "relay3": false, "relay4": true} {
		if got, err := relays.Get(name); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %t", name, got, err, want)
		}
	}
	// A fifth relay is not on a 4-channel board.
	if res := r.ask([]byte{0x03, 0x05, 0x00, 0x04, 0xFF, 0x00}, 5); !bytes.Equal(res, []byte{0x03, 0x85, 0x02}) {
		t.Errorf("coil 4 on a relay_board_4: % x, want the exception 03 85 02", res)
	}
}

// TestEastronTwinKeepsOverrides: a register the manifest declares over the
// profile's (power rescaled to kW) still reads the quantity the meter
// sends, and sim.values start the energy.
func TestEastronTwinKeepsOverrides(t *testing.T) {
	w, clk := newWorld(t, manifesttest.Parse(t, "kw.yml", `
version: 1
gateway: meters
buses: [{name: lan, kind: modbus_tcp, address: "192.0.2.1:502"}]
devices:
  - name: flat
    bus: lan
    model: modbus
    unit_id: 1
    profile: eastron_sdm120
    registers:
      - {name: power_kw, table: input, address: 0x0C, type: float32, scale: 0.001}
    sim: {values: {import_energy: 1523.5}}
capabilities:
  - {name: flat_power, type: number, unit: kW, read: {device: flat, channel: power_kw}}
`))
	flat, _ := w.ModbusSlave("flat")
	if p, err := flat.Get("power_kw"); err != nil || p != float64(float32(sim.MeterBaseLoad))*0.001 {
		t.Errorf("power_kw = %v, %v; want the 150 W base load as %v kW", p, err, sim.MeterBaseLoad*0.001)
	}
	if _, err := flat.Get("power"); err == nil {
		t.Error("the profile's power register is still there beside power_kw at the same address")
	}
	clk.Advance(10 * time.Hour)
	if e, _ := flat.Get("total_energy"); e != float64(float32(1523.5+1.5)) {
		t.Errorf("total_energy after 10 h at 150 W from 1523.5 kWh = %v, want 1525", e)
	}
}
