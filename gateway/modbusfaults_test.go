package gateway_test

import (
	"testing"
	"time"

	"github.com/promcp/promcp-device/gateway/gatewaytest"
	"github.com/promcp/promcp-device/manifests"
	"github.com/promcp/promcp-device/promcp"
	"github.com/promcp/promcp-device/simtest"
)

// TestModbusFaultsThroughServer injects every fault that a Modbus line can
// show into the simulated slaves and reads through the MCP server: the
// real driver sees the silence, the exception, the garbled CRC or the
// distorted registers, and the quality rules judge them as on I2C.
func TestModbusFaultsThroughServer(t *testing.T) {
	cases := []faultCase{
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultDropout}, 1, promcp.QualityStale, "read failed (timeout); last good value from 2 s ago"},
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultTimeout}, 1, promcp.QualityStale, "read failed (timeout)"},
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultNACK}, 1, promcp.QualityError, "read failed (device error)"},
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultNoise, Amplitude: 5000}, 1, promcp.QualityDegraded, "jump: "},
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultImplausible}, 1, promcp.QualityDegraded, "implausible: "},
		{"read_power", "meter", manifests.Fault{Kind: manifests.FaultSlow, Delay: 20 * time.Millisecond}, 1, promcp.QualityGood, ""},
		{"read_energy", "meter", manifests.Fault{Kind: manifests.FaultStuck}, 3, promcp.QualityDegraded, "stuck: "},
		{"read_fan_setpoint", "vfd", manifests.Fault{Kind: manifests.FaultCRC}, 1, promcp.QualityStale, "read failed (crc)"},
	}
	runFaultCases(t, cases, ttl, false, newModbusBench)
}

// newModbusBench serves simtest's modbus-bench.yml (an energy meter on
// Modbus TCP and a VFD on RTU over TCP, so that a garbled CRC can be seen)
// on simulated slaves on loopback sockets. The simulator's physics run on
// a manual clock; bus timeouts are real, and short.
func newModbusBench(t *testing.T) *bench {
	t.Helper()
	return serveAt(t, simtest.Manifest(t, "modbus-bench.yml"), epoch, gatewaytest.Options{Hardware: lines(t)})
}
