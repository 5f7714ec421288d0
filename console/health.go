package console

import (
	"errors"
	"slices"
	"time"

	"github.com/promcp/promcp-device/capabilities"
	"github.com/promcp/promcp-device/drivers/modbus"
)

// busHealth is one bus as the health view shows it: the transactions
// behind its capabilities, the failed ones by class, and the devices whose
// circuit breaker is open.
type busHealth struct {
	Bus, Driver                       string
	Transactions                      uint64
	Timeouts, NACKs, CRCErrors, Other uint64
	OpenBreakers                      []string
	Latency                           time.Duration
	latencies                         int
}

// deviceHealth is one device: its bus, its last good read and its last
// error.
type deviceHealth struct {
	Device, Bus   string
	LastGood      time.Time
	LastError     string
	LastErrorTime time.Time
	Failing       bool // its last transaction failed
}

// health is what the capabilities' health trackers count now (what
// /metrics exports), by bus and by device.
func (c *Console) health() ([]busHealth, []deviceHealth) {
	if c.cfg.Capabilities == nil {
		return nil, nil
	}
	var buses []busHealth
	var devs []deviceHealth
	for _, cp := range c.cfg.Capabilities.All() {
		h := cp.Health()
		b := cp.Binding
		name := b.Bus
		if name == "" {
			name = b.Driver
		}
		i := slices.IndexFunc(buses, func(x busHealth) bool { return x.Bus == name })
		if i < 0 {
			buses = append(buses, busHealth{Bus: name, Driver: b.Driver})
			i = len(buses) - 1
		}
		bh := &buses[i]
		bh.Transactions += h.Transactions
		bh.Timeouts += h.Timeouts
		bh.NACKs += h.NACKs
		bh.CRCErrors += h.CRCErrors
		bh.Other += h.Failures - min(h.Failures, h.Timeouts+h.NACKs+h.CRCErrors)
		if h.Latency > 0 {
			bh.Latency = (bh.Latency*time.Duration(bh.latencies) + h.Latency) / time.Duration(bh.latencies+1)
			bh.latencies++
		}
		open := h.ConsecutiveFailures > 0 && errors.Is(h.LastError, modbus.ErrCircuitOpen)
		if open && !slices.Contains(bh.OpenBreakers, b.Device) {
			bh.OpenBreakers = append(bh.OpenBreakers, b.Device)
		}
		devs = addDevice(devs, b, h)
	}
	return buses, devs
}

// addDevice folds one capability's health into its device's.
func addDevice(devs []deviceHealth, b capabilities.Binding, h capabilities.Health) []deviceHealth {
	if b.Device == "" {
		return devs
	}
	i := slices.IndexFunc(devs, func(x deviceHealth) bool { return x.Device == b.Device })
	if i < 0 {
		devs = append(devs, deviceHealth{Device: b.Device, Bus: b.Bus})
		i = len(devs) - 1
	}
	d := &devs[i]
	if h.LastGoodTime.After(d.LastGood) {
		d.LastGood = h.LastGoodTime
	}
	if h.LastError != nil && h.LastErrorTime.After(d.LastErrorTime) {
		d.LastError, d.LastErrorTime = h.LastError.Error(), h.LastErrorTime
	}
	if h.ConsecutiveFailures > 0 {
		d.Failing = true
	}
	return devs
}
