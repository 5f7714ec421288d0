package manifests

import (
	"math"
	"net"
	"regexp"
	"strconv"

	"github.com/goccy/go-yaml/ast"
)

// busLine decodes the Modbus and serial settings of a bus. Which keys a
// kind allows is checked by checkBuses; here each value is decoded and
// range-checked on its own.
func (d *decoder) busLine(f map[string]ast.Node, path string, b *Bus) {
	field := func(k string) string { return join(path, k) }
	if s, ok := d.str(f["address"], field("address")); ok {
		if host, port, err := net.SplitHostPort(s); err != nil || host == "" || !validPort(port) {
			d.add(field("address"), ErrRange, ": %q (want host:port, such as \"192.168.1.20:502\")", s)
		} else {
			b.Address = s
		}
	}
	sp := &b.Serial
	sp.Port, _ = d.str(f["port"], field("port"))
	if b.Kind.IsSerialPort() {
		sp.Baud, sp.DataBits, sp.StopBits = DefaultBaud, DefaultDataBits, DefaultStopBits
		sp.Parity, sp.RS485 = ParityNone, RS485None
	}
	if v, ok := d.integer(f["baud"], field("baud")); ok {
		if v < 300 || v > 4000000 {
			d.add(field("baud"), ErrRange, ": %d (want 300..4000000 bits per second)", v)
		} else {
			sp.Baud = int(v)
		}
	}
	if v, ok := d.integer(f["data_bits"], field("data_bits")); ok {
		if v != 7 && v != 8 {
			d.add(field("data_bits"), ErrRange, ": %d (want 7 or 8)", v)
		} else {
			sp.DataBits = int(v)
		}
	}
	if p, ok := d.oneOfValue(f["parity"], field("parity"), parities...); ok {
		sp.Parity = Parity(p)
	}
	if v, ok := d.integer(f["stop_bits"], field("stop_bits")); ok {
		if v != 1 && v != 2 {
			d.add(field("stop_bits"), ErrRange, ": %d (want 1 or 2)", v)
		} else {
			sp.StopBits = int(v)
		}
	}
	if m, ok := d.oneOfValue(f["rs485"], field("rs485"), rs485Modes...); ok {
		sp.RS485 = RS485(m)
	}
	sp.FrameGap = d.duration(f["frame_gap"], field("frame_gap"))
	if b.Kind.IsModbus() || b.Kind == BusSerial {
		b.Retries = DefaultRetries
	}
	if v, ok := d.integer(f["retries"], field("retries")); ok {
		if v < 0 || v > 10 {
			d.add(field("retries"), ErrRange, ": %d (want 0..10)", v)
		} else {
			b.Retries = int(v)
		}
	}
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 0 && n <= 65535
}

// deviceLine decodes the modbus and serial_line keys of a device.
func (d *decoder) deviceLine(f map[string]ast.Node, path string, dev *Device) {
	field := func(k string) string { return join(path, k) }
	if v, ok := d.integer(f["unit_id"], field("unit_id")); ok {
		if v < 0 || v > 255 {
			d.add(field("unit_id"), ErrRange, ": %d (want a Modbus unit id, 1..247 on a serial line, 0..255 on TCP)", v)
		} else {
			dev.UnitID = uint8(v)
		}
	}
	if v, ok := d.integer(f["max_span"], field("max_span")); ok {
		if v < 0 || v > MaxReadRegisters {
			d.add(field("max_span"), ErrRange, ": %d (want 0..%d registers per read)", v, MaxReadRegisters)
		} else {
			dev.MaxSpan = int(v)
		}
	}
	dev.Timeout = d.duration(f["timeout"], field("timeout"))
	dev.Line.Request, _ = d.str(f["request"], field("request"))
	if dev.Model == ModelSerialLine {
		dev.Line.Terminator = "\r\n"
	}
	if s, ok := d.str(f["terminator"], field("terminator")); ok {
		if s == "" {
			d.add(field("terminator"), ErrRange, `: "" (want the bytes that end a line, such as "\r\n")`)
		} else {
			dev.Line.Terminator = s
		}
	}
	if s, ok := d.str(f["response"], field("response")); ok {
		if re, err := regexp.Compile(s); err != nil {
			d.add(field("response"), ErrSyntax, ": %q is not a regular expression: %v", s, err)
		} else if len(channelsOf(re)) == 0 {
			d.add(field("response"), ErrMissing, "named group in %q (want a group per value, such as \"T=(?P<temperature>[-0-9.]+)\")", s)
		} else {
			dev.Line.Response = s
		}
	}
}

// channelsOf returns the named groups of a serial_line response pattern.
func channelsOf(re *regexp.Regexp) []string {
	var names []string
	for _, n := range re.SubexpNames() {
		if n != "" {
			names = append(names, n)
		}
	}
	return names
}

// LineChannels returns the channels of a serial_line device: the named
// groups of its response pattern.
func LineChannels(l LineInstrument) []string {
	re, err := regexp.Compile(l.Response)
	if err != nil {
		return nil
	}
	return channelsOf(re)
}

func (d *decoder) modbusRegister(n ast.Node, path string) ModbusRegister {
	r := ModbusRegister{ByteOrder: OrderABCD, Bit: -1, Scale: 1}
	f, ok := d.fields(n, path, modbusRegKeys...)
	if !ok {
		d.missingItem(n, path)
		return r
	}
	field := func(k string) string { return join(path, k) }
	r.Name, _ = d.name(f["name"], field("name"))
	d.required(f, path, "name", "a lower_snake_case name")
	t, _ := d.oneOfValue(f["table"], field("table"), tables...)
	r.Table = Table(t)
	d.required(f, path, "table", oneOf(tables))
	if a, ok := d.integer(f["address"], field("address")); ok {
		if a < 0 || a > math.MaxUint16 {
			d.add(field("address"), ErrRange, ": %d (want a 0-based PDU address, 0..65535)", a)
		} else {
			r.Address = uint16(a)
		}
	}
	d.required(f, path, "address", "the 0-based PDU address, 0..65535 (holding register 40001 is 0)")
	typ, _ := d.oneOfValue(f["type"], field("type"), dataTypes...)
	r.Type = DataType(typ)
	d.required(f, path, "type", oneOf(dataTypes))
	if bo, ok := d.oneOfValue(f["byte_order"], field("byte_order"), wordOrders...); ok {
		r.ByteOrder = WordOrder(bo)
	}
	if b, ok := d.integer(f["bit"], field("bit")); ok {
		if b < 0 || b > 15 {
			d.add(field("bit"), ErrRange, ": %d (want 0..15, 0 the least significant)", b)
		} else {
			r.Bit = int(b)
		}
	}
	if l, ok := d.integer(f["length"], field("length")); ok {
		if l < 1 || l > MaxReadRegisters {
			d.add(field("length"), ErrRange, ": %d (want 1..%d registers, two characters each)", l, MaxReadRegisters)
		} else {
			r.Length = int(l)
		}
	}
	if s, ok := d.number(f["scale"], field("scale")); ok {
		if s == 0 {
			d.add(field("scale"), ErrRange, ": 0 (want a non-zero factor; leave scale out for 1)")
		} else {
			r.Scale = s
		}
	}
	r.Offset, _ = d.number(f["offset"], field("offset"))
	r.Writable = d.boolean(f["writable"], field("writable"))
	return r
}
