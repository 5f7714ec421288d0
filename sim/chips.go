package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c"
	"github.com/promcp/promcp-device/manifests"
)

// The simulated chips answer register transactions as the datasheets
// describe them; each is guarded by World.mu. Their engineering values come
// from the device's sim values (by channel name) and are encoded with the
// chip's own conversion, so a driver that decodes them right reads them
// back to the chip's resolution.

// DefaultPressure is a simulated BME280's pressure without a sim value, hPa.
const DefaultPressure = manifests.DefaultSimPressure

// bmeSimCalib1 and bmeSimCalib2 are the trimming parameters of the
// simulated BME280 and BMP280: those of a real BME280 (periph.io's bmxx80
// test recording).
var (
	bmeSimCalib1 = []byte{0x10, 0x6e, 0x6c, 0x66, 0x32, 0x0, 0x5d, 0x95, 0xb8, 0xd5, 0xd0, 0xb, 0x77, 0x1e, 0x9d, 0xff, 0xf9, 0xff, 0xac, 0x26, 0xa, 0xd8, 0xbd, 0x10, 0x0, 0x4b}
	bmeSimCalib2 = []byte{0x6e, 0x1, 0x0, 0x13, 0x5, 0x0, 0x1e}
)

// bme280 is a simulated Bosch BME280 or BMP280 on I2C.
type bme280 struct {
	humidity bool
	regs     [256]byte
	ptr      uint8
	cal      i2c.BMECalibration
	// Temperature °C, pressure hPa, humidity %RH.
	t, p, h float64
	// zone, when the manifest's sim lists the sensor in one, gives the
	// temperature and humidity of each measurement.
	zone *zone
}

func newBME280(d manifests.Device) (*bme280, error) {
	s := &bme280{humidity: d.Model == manifests.ModelBME280, t: DefaultTemperature, p: DefaultPressure, h: DefaultHumidity}
	var h []byte
	if s.humidity {
		h = bmeSimCalib2
	}
	cal, err := i2c.ParseBMECalibration(bmeSimCalib1, h)
	if err != nil {
		return nil, err
	}
	s.cal = cal
	if d.Sim != nil {
		for k, v := range d.Sim.Values {
			switch k {
			case "temperature":
				s.t = v
			case "pressure":
				s.p = v
			case "humidity":
				s.h = v
			}
		}
	}
	s.reset()
	return s, nil
}

// reset puts the registers in their power-on state.
func (s *bme280) reset() {
	s.regs = [256]byte{}
	copy(s.regs[i2c.BMERegCalib1:], bmeSimCalib1)
	s.regs[i2c.BMERegChipID] = i2c.BMP280ChipID
	if s.humidity {
		s.regs[i2c.BMERegChipID] = i2c.BME280ChipID
		copy(s.regs[i2c.BMERegCalib2:], bmeSimCalib2)
	}
	copy(s.regs[i2c.BMERegData:], []byte{0x80, 0, 0, 0x80, 0, 0, 0x80, 0})
}

func (s *bme280) tx(now time.Time, fs *faultState, w, r []byte) error {
	// Writes come as register/value pairs (datasheet 6.2.1); a lone byte
	// sets the read pointer.
	for len(w) >= 2 {
		s.write(now, fs, w[0], w[1])
		w = w[2:]
	}
	if len(w) == 1 {
		s.ptr = w[0]
	}
	for i := range r {
		r[i] = s.regs[s.ptr]
		s.ptr++ // auto-increment on reads
	}
	return nil
}

func (s *bme280) write(now time.Time, fs *faultState, reg, v byte) {
	switch reg {
	case i2c.BMERegReset:
		if v == 0xB6 {
			s.reset()
		}
	case i2c.BMERegCtrlHum:
		if s.humidity {
			s.regs[reg] = v & 7
		}
	case i2c.BMERegConfig:
		s.regs[reg] = v &^ 2
	case i2c.BMERegCtrlMeas:
		s.regs[reg] = v
		if v&3 != 0 {
			s.measure(now, fs, v>>5&7, v>>2&7, s.regs[i2c.BMERegCtrlHum]&7)
			if v&3 != 3 {
				s.regs[reg] = v &^ 3 // forced mode returns to sleep
			}
		}
	}
}

// measure fills the data registers as a conversion with these oversampling
// settings (0: skipped) does.
func (s *bme280) measure(now time.Time, fs *faultState, osT, osP, osH byte) {
	data := s.regs[i2c.BMERegData : i2c.BMERegData+8]
	if fs.is(manifests.FaultStuck) {
		if !fs.frozenValid {
			fs.frozen, fs.frozenValid = append([]byte(nil), data...), true
		}
		copy(data, fs.frozen)
		return
	}
	t, p, h := s.t, s.p, s.h
	if s.zone != nil {
		t, h = s.zone.sample(now)
	}
	switch {
	case fs.is(manifests.FaultNoise):
		sp := fs.spike()
		switch fs.f.Channel {
		case "pressure":
			p += sp
		case "humidity":
			h += sp
		default:
			t += sp
		}
	case fs.is(manifests.FaultImplausible) && fs.f.Value != nil:
		switch fs.f.Channel {
		case "pressure":
			p = *fs.f.Value
		case "humidity":
			h = *fs.f.Value
		default:
			t = *fs.f.Value
		}
	}
	adcT := s.search(0, 0xFFFFF, true, func(a int32) float64 { c, _, _ := s.cal.Compensate(a, 0, 0); return float64(c) / 100 }, t)
	if fs.is(manifests.FaultImplausible) && fs.f.Value == nil {
		adcT = 0xFFFF0 // railed
	}
	adcP := s.search(0, 0xFFFFF, false, func(a int32) float64 { _, v, _ := s.cal.Compensate(adcT, a, 0); return float64(v) / 25600 }, p)
	adcH := s.search(0, 0xFFFF, true, func(a int32) float64 { _, _, v := s.cal.Compensate(adcT, 0x80000, a); return float64(v) / 1024 }, h)
	if osT == 0 {
		adcT = i2c.BMESkipped
	}
	if osP == 0 {
		adcP = i2c.BMESkipped
	}
	copy(data, []byte{byte(adcP >> 12), byte(adcP >> 4), byte(adcP << 4), byte(adcT >> 12), byte(adcT >> 4), byte(adcT << 4)})
	if s.humidity {
		if osH == 0 {
			adcH = i2c.BMEHumSkipped
		}
		data[6], data[7] = byte(adcH>>8), byte(adcH)
	}
}

// search finds the ADC output in lo..hi whose compensated value f is
// nearest want, f being monotonic (increasing when up).
func (s *bme280) search(lo, hi int32, up bool, f func(int32) float64, want float64) int32 {
	a, b := lo, hi
	for a < b {
		m := a + (b-a)/2
		if (f(m) < want) == up {
			a = m + 1
		} else {
			b = m
		}
	}
	if a > lo && math.Abs(f(a-1)-want) < math.Abs(f(a)-want) {
		return a - 1
	}
	return a
}

// addBME280 adds a simulated BME280 or BMP280.
func addBME280(w *World, d manifests.Device, bl *build) error {
	return w.addI2C(d, func() (device, error) {
		s, err := newBME280(d)
		if err == nil {
			bl.bmes[d.Name] = s
		}
		return s, err
	})
}

// ads1x15 is a simulated TI ADS1015 or ADS1115.
type ads1x15 struct {
	twelveBit bool
	ptr       uint8
	config    uint16
	conv      uint16
	lo, hi    uint16
	ain       [4]float64 // volts on AIN0..AIN3
	inputs    []manifests.ADCInput
}

func newADS1x15(d manifests.Device) *ads1x15 {
	s := &ads1x15{twelveBit: d.Model == manifests.ModelADS1015, config: i2c.ADSConfigDefault, lo: 0x8000, hi: 0x7FFF, inputs: d.Inputs}
	var set [4]bool
	// The inputs given in sim.values first, then the others mid-range
	// (ADCMid): a probe reads plausibly before anyone sets it.
	for _, given := range []bool{true, false} {
		for _, in := range d.Inputs {
			v, ok := 0.0, false
			if d.Sim != nil {
				v, ok = d.Sim.Values[in.Name]
			}
			pos, neg := adsPins(in.Input)
			if ok != given || set[pos] {
				continue
			}
			volts := ADCMid(in, in.FullScale)
			if ok {
				volts = ADCVolts(in, v)
			}
			if neg >= 0 {
				volts += s.ain[neg]
			}
			s.ain[pos], set[pos] = volts, true
		}
	}
	return s
}

// ADCMid is the voltage the simulator puts on an ADC input that sim.values
// does not set: mid-range in the input's scale (12 mA on a current loop,
// 50 % of a percent input, half the full scale of a voltage), so that an
// untouched probe reads plausibly, never 0 V shown as 183 %.
func ADCMid(in manifests.ADCInput, fullScale float64) float64 {
	switch in.As {
	case manifests.ScaleMilliamps:
		return ADCVolts(in, 12)
	case manifests.ScalePercent:
		return ADCVolts(in, 50)
	}
	return fullScale / 2
}

// adsPins returns the positive and negative pins of a mux word (neg -1:
// GND).
func adsPins(mux string) (pos, neg int) {
	pos, neg = int(mux[1]-'0'), -1
	if len(mux) == 5 {
		neg = int(mux[4] - '0')
	}
	return pos, neg
}

// ADCVolts is the voltage on an ADC input that reads as v in the input's
// scale (the inverse of the scaling the capabilities apply).
func ADCVolts(in manifests.ADCInput, v float64) float64 {
	switch in.As {
	case manifests.ScaleMilliamps:
		return v / 1000 * in.ShuntOhms
	case manifests.ScalePercent:
		r := in.Zero + v/100*(in.Full-in.Zero)
		if in.ShuntOhms > 0 {
			return r / 1000 * in.ShuntOhms
		}
		return r
	}
	return v
}

func (s *ads1x15) tx(_ time.Time, fs *faultState, w, r []byte) error {
	if len(w) > 0 {
		s.ptr = w[0] & 3
		if len(w) >= 3 {
			v := uint16(w[1])<<8 | uint16(w[2])
			switch s.ptr {
			case i2c.ADSRegConfig:
				s.config = v &^ i2c.ADSConfigOS
				if v&i2c.ADSConfigMode == 0 || v&i2c.ADSConfigOS != 0 {
					s.convert(fs)
				}
				s.config |= i2c.ADSConfigOS // idle: the conversion is done
			case 2:
				s.lo = v
			case 3:
				s.hi = v
			}
		}
	}
	if len(r) == 0 {
		return nil
	}
	if s.ptr == i2c.ADSRegConversion && s.config&i2c.ADSConfigMode == 0 {
		s.convert(fs) // continuous mode: always a fresh result
	}
	var v uint16
	switch s.ptr {
	case i2c.ADSRegConversion:
		v = s.conv
	case i2c.ADSRegConfig:
		v = s.config
	case 2:
		v = s.lo
	default:
		v = s.hi
	}
	for i := range r {
		r[i] = 0xFF
		if i < 2 {
			r[i] = byte(v >> (8 * (1 - i)))
		}
	}
	return nil
}

// convert runs a conversion with the current config.
func (s *ads1x15) convert(fs *faultState) {
	mux := uint8(s.config >> i2c.ADSConfigMuxShift & 7)
	pga := uint8(s.config >> i2c.ADSConfigPGAShift & 7)
	var v float64
	if mux >= 4 {
		v = s.ain[mux-4]
	} else {
		pos := [4]int{0, 0, 1, 2}[mux]
		neg := [4]int{1, 3, 3, 3}[mux]
		v = s.ain[pos] - s.ain[neg]
	}
	var in *manifests.ADCInput
	for i := range s.inputs {
		if p, ok := i2cMux(s.inputs[i].Input); ok && p == mux && (fs == nil || fs.f.Channel == "" || fs.f.Channel == s.inputs[i].Name) {
			in = &s.inputs[i]
			break
		}
	}
	switch {
	case fs.is(manifests.FaultStuck):
		if !fs.frozenValid {
			c := i2c.ADSCode(v, pga, s.twelveBit)
			fs.frozen, fs.frozenValid = []byte{byte(c >> 8), byte(c)}, true
		}
		s.conv = uint16(fs.frozen[0])<<8 | uint16(fs.frozen[1])
		return
	case fs.is(manifests.FaultNoise) && in != nil:
		v = ADCVolts(*in, adcValue(*in, v)+fs.spike())
	case fs.is(manifests.FaultImplausible) && in != nil:
		if fs.f.Value == nil {
			v = 1e9 // railed: the chip saturates at full scale
		} else {
			v = ADCVolts(*in, *fs.f.Value)
		}
	}
	s.conv = i2c.ADSCode(v, pga, s.twelveBit)
}

// adcValue is the reading of v volts in the input's scale.
func adcValue(in manifests.ADCInput, v float64) float64 {
	switch in.As {
	case manifests.ScaleMilliamps:
		return v / in.ShuntOhms * 1000
	case manifests.ScalePercent:
		if in.ShuntOhms > 0 {
			v = v / in.ShuntOhms * 1000
		}
		return (v - in.Zero) / (in.Full - in.Zero) * 100
	}
	return v
}

// i2cMux maps a manifest input word to the MUX field.
func i2cMux(s string) (uint8, bool) {
	for i, w := range []string{"a0_a1", "a0_a3", "a1_a3", "a2_a3", "a0", "a1", "a2", "a3"} {
		if w == s {
			return uint8(i), true
		}
	}
	return 0, false
}

// addADS1x15 adds a simulated ADS1015 or ADS1115.
func addADS1x15(w *World, d manifests.Device, _ *build) error {
	return w.addI2C(d, func() (device, error) { return newADS1x15(d), nil })
}

// ina219 is a simulated TI INA219 across a shunt.
type ina219 struct {
	ptr       uint8
	config    uint16
	cal       uint16
	shuntOhms float64
	volts     float64 // bus, V
	amps      float64 // through the shunt, A
}

func newINA219(d manifests.Device) *ina219 {
	s := &ina219{config: i2c.INAConfigDefault, shuntOhms: d.ShuntOhms, volts: 12, amps: 0.5}
	if d.Sim != nil {
		if v, ok := d.Sim.Values["bus_voltage"]; ok {
			s.volts = v
		}
		if v, ok := d.Sim.Values["current"]; ok {
			s.amps = v
		}
		if v, ok := d.Sim.Values["shunt_voltage"]; ok {
			s.amps = v / 1000 / s.shuntOhms
		}
	}
	return s
}

func (s *ina219) tx(_ time.Time, fs *faultState, w, r []byte) error {
	if len(w) > 0 {
		s.ptr = w[0]
		if len(w) >= 3 {
			v := uint16(w[1])<<8 | uint16(w[2])
			switch s.ptr {
			case i2c.INARegConfig:
				s.config = v &^ 0x8000
				if v&0x8000 != 0 { // RST
					s.config, s.cal = i2c.INAConfigDefault, 0
				}
			case i2c.INARegCalibration:
				s.cal = v &^ 1
			default:
				return nack(fmt.Sprintf("ina219: write to read-only register 0x%02x", s.ptr))
			}
		}
	}
	if len(r) == 0 {
		return nil
	}
	if s.ptr > i2c.INARegCalibration {
		return nack(fmt.Sprintf("ina219: no register 0x%02x", s.ptr))
	}
	regs := s.registers(fs)
	v := regs[s.ptr]
	for i := range r {
		r[i] = 0xFF
		if i < 2 {
			r[i] = byte(v >> (8 * (1 - i)))
		}
	}
	return nil
}

// registers computes the six registers as the chip's ADC and arithmetic
// unit would (datasheet 8.5.1), at PGA /8 and the 32 V range.
func (s *ina219) registers(fs *faultState) [6]uint16 {
	volts, amps := s.volts, s.amps
	switch {
	case fs.is(manifests.FaultNoise):
		if fs.f.Channel == "bus_voltage" {
			volts += fs.spike()
		} else {
			amps += fs.spike()
		}
	case fs.is(manifests.FaultImplausible) && fs.f.Value != nil:
		if fs.f.Channel == "bus_voltage" {
			volts = *fs.f.Value
		} else {
			amps = *fs.f.Value
		}
	case fs.is(manifests.FaultImplausible):
		volts = 32.76 // railed
	}
	shunt := math.Round(amps * s.shuntOhms / 10e-6)
	shunt = max(min(shunt, 32000), -32000)
	bus := math.Round(max(min(volts, 32.76), 0) / 0.004)
	cur := math.Trunc(shunt * float64(s.cal) / 4096)
	power := math.Trunc(math.Abs(cur) * bus / 5000)
	busReg := uint16(bus)<<3 | 2 // CNVR
	if cur > math.MaxInt16 || cur < math.MinInt16 || power > math.MaxUint16 {
		busReg |= i2c.INABusOVF
		cur, power = 0, 0
	}
	regs := [6]uint16{s.config, uint16(int16(shunt)), busReg, uint16(power), uint16(int16(cur)), s.cal}
	if fs.is(manifests.FaultStuck) {
		if !fs.frozenValid {
			fs.frozen, fs.frozenValid = make([]byte, 8), true
			for i := range 4 {
				fs.frozen[2*i], fs.frozen[2*i+1] = byte(regs[i+1]>>8), byte(regs[i+1])
			}
		}
		for i := range 4 {
			regs[i+1] = uint16(fs.frozen[2*i])<<8 | uint16(fs.frozen[2*i+1])
		}
	}
	return regs
}

// addINA219 adds a simulated INA219.
func addINA219(w *World, d manifests.Device, _ *build) error {
	return w.addI2C(d, func() (device, error) { return newINA219(d), nil })
}

// expander is a simulated MCP23017 (registers in BANK 0 layout) or
// PCF8574 (one quasi-bidirectional port).
type expander struct {
	mcp  bool
	regs [0x16]byte // MCP23017
	ptr  uint8
	// latch is the PCF8574's port latch (power-on 0xFF).
	latch uint8
	// ext is the electrical level the outside world puts on each input.
	ext uint16
}

func newExpander(d manifests.Device) *expander {
	s := &expander{mcp: d.Model == manifests.ModelMCP23017, latch: 0xFF}
	s.regs[i2c.MCPRegIODIR], s.regs[i2c.MCPRegIODIR+1] = 0xFF, 0xFF
	for _, p := range d.Pins {
		if p.Output {
			s.ext |= 1 << p.Pin // nothing outside pulls a relay driver's line
			continue
		}
		logical := d.Sim != nil && d.Sim.Values[p.Name] == 1
		if logical != p.ActiveLow {
			s.ext |= 1 << p.Pin
		}
	}
	if !s.mcp {
		// Undeclared pins float high through the weak pull-up.
		s.ext |= 0xFF &^ pinMask(d.Pins)
	}
	return s
}

func pinMask(pins []manifests.ExpanderPin) uint16 {
	var m uint16
	for _, p := range pins {
		m |= 1 << p.Pin
	}
	return m
}

func (s *expander) tx(_ time.Time, fs *faultState, w, r []byte) error {
	if !s.mcp {
		if len(w) > 0 {
			s.latch = w[len(w)-1]
		}
		if len(r) > 0 {
			b := []byte{s.latch & byte(s.ext)}
			s.freeze(fs, b)
			for i := range r {
				r[i] = b[0]
			}
		}
		return nil
	}
	if len(w) > 0 {
		s.ptr = w[0] % 0x16
		for _, v := range w[1:] {
			switch {
			case s.ptr == i2c.MCPRegGPIO || s.ptr == i2c.MCPRegGPIO+1:
				s.regs[s.ptr+2] = v // a GPIO write lands in OLAT
			case s.ptr == 0x0E || s.ptr == 0x0F || s.ptr == 0x10 || s.ptr == 0x11:
				// INTF and INTCAP are read-only
			default:
				s.regs[s.ptr] = v
			}
			s.ptr = (s.ptr + 1) % 0x16
		}
	}
	if len(r) == 0 {
		return nil
	}
	dir := uint16(s.regs[0]) | uint16(s.regs[1])<<8
	olat := uint16(s.regs[0x14]) | uint16(s.regs[0x15])<<8
	ipol := uint16(s.regs[2]) | uint16(s.regs[3])<<8
	gpio := (olat &^ dir) | ((s.ext ^ ipol) & dir)
	g := []byte{byte(gpio), byte(gpio >> 8)}
	start := s.ptr
	for i := range r {
		switch s.ptr {
		case i2c.MCPRegGPIO, i2c.MCPRegGPIO + 1:
			r[i] = g[s.ptr-i2c.MCPRegGPIO]
		default:
			r[i] = s.regs[s.ptr]
		}
		s.ptr = (s.ptr + 1) % 0x16
	}
	if start == i2c.MCPRegGPIO && len(r) >= 2 {
		s.freeze(fs, r[:2])
	}
	return nil
}

// freeze makes a stuck expander answer its first port read forever.
func (s *expander) freeze(fs *faultState, b []byte) {
	if !fs.is(manifests.FaultStuck) {
		return
	}
	if !fs.frozenValid {
		fs.frozen, fs.frozenValid = append([]byte(nil), b...), true
	}
	copy(b, fs.frozen)
}

// addExpander adds a simulated MCP23017 or PCF8574.
func addExpander(w *World, d manifests.Device, _ *build) error {
	return w.addI2C(d, func() (device, error) { return newExpander(d), nil })
}
