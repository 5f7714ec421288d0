package manifests

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c/i2cconf"
	"github.com/promcp/promcp-device/drivers/modbus/modbusconf"
)

func loadPhysMCP(t *testing.T, dir string) (*Manifest, *Policy) {
	t.Helper()
	m, err := Load(filepath.Join(dir, PhysMCPManifestName))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if m.PolicyFile() == "" {
		return m, nil
	}
	p, err := LoadPolicy(m.PolicyFile(), m)
	if err != nil {
		t.Fatalf("load policy: %v", err)
	}
	return m, p
}

// The spec's own examples (PhysMCP v0.1 §5.2, §5.3 with the §6 policy)
// load into the values the gateway serves.
func TestPhysMCPSpecExamples(t *testing.T) {
	m, p := loadPhysMCP(t, "testdata/physmcp/spec52")
	if m.Gateway != "node_temp_zone3_001" || m.Policy != PolicyNone || p != nil {
		t.Fatalf("§5.2: gateway %q policy %q", m.Gateway, m.Policy)
	}
	c := m.Capabilities[0]
	if c.Name != "temperature_0" || c.Type != TypeNumber || c.Unit != "°C" || c.Location != "zone_3" ||
		c.Health.Plausible == nil || *c.Health.Plausible != (Range{-40, 125}) || c.Do != nil {
		t.Fatalf("§5.2 capability: %+v", c)
	}
	dev := m.Devices[0]
	if dev.Model != ModelRegisters || dev.Address != 0x48 || dev.Registers[0].Address != 0 || dev.Registers[0].Type != i2cconf.RegInt16 {
		t.Fatalf("§5.2 device: %+v", dev)
	}

	m, p = loadPhysMCP(t, "testdata/physmcp/spec53")
	byName := map[string]Capability{}
	for _, c := range m.Capabilities {
		byName[c.Name] = c
	}
	if got := byName["temperature_zone_3"].TTL; got != 2*time.Second {
		t.Errorf("cache_ttl_ms 2000: ttl %v", got)
	}
	sp := byName["setpoint_0"]
	if sp.Do == nil || sp.Do.Tool != "do_setpoint_0" || *sp.Do.Constraints.Min != 19 || *sp.Do.Constraints.Max != 25 {
		t.Fatalf("setpoint_0 (range 18..26 narrowed by the range_guard 19..25): %+v", sp.Do)
	}
	var modbus *Device
	for i := range m.Devices {
		if m.Devices[i].Model == ModelModbus {
			modbus = &m.Devices[i]
		}
	}
	if modbus == nil || modbus.UnitID != 1 || modbus.Timeout != 2*time.Second {
		t.Fatalf("modbus device: %+v", modbus)
	}
	regs := map[string]ModbusRegister{}
	for _, r := range modbus.ModbusRegisters {
		regs[r.Name] = r
	}
	if r := regs["setpoint_0"]; r.Table != modbusconf.TableHolding || r.Address != 0 || !r.Writable {
		t.Errorf("40001 is holding 0: %+v", r)
	}
	if r := regs["fan_mode_0"]; r.Address != 9 {
		t.Errorf("40010 is holding 9: %+v", r)
	}
	if fm := byName["fan_mode_0"]; fm.Type != TypeEnum || !reflect.DeepEqual(fm.Do.Constraints.Enum, []string{"auto", "low", "medium", "high", "off"}) {
		t.Errorf("enum of 5 values keeps its names: %s %+v", fm.Type, fm.Do.Constraints)
	}
	a := p.Actions["do_setpoint_0"]
	if a == nil || !reflect.DeepEqual(a.Roles, []string{"operator", "supervisor"}) || !a.Clamp ||
		a.Cooldown != 30*time.Second || *a.RateLimit != (RateLimit{6, time.Hour}) || a.Quorum.MinPeers != 3 ||
		a.Windows.Location.String() != "America/Monterrey" || len(a.Windows.Allow) != 1 || len(a.Windows.Deny) != 1 ||
		a.Windows.Allow[0].From != 7*time.Hour || a.Windows.Deny[0].Days[0] != time.Sunday {
		t.Fatalf("do_setpoint_0 policy: %+v", a)
	}
	if f := p.Actions["do_fan_mode_0"]; *f.RateLimit != (RateLimit{12, time.Hour}) || !reflect.DeepEqual(f.Roles, []string{"operator"}) {
		t.Fatalf("do_fan_mode_0 policy: %+v", f)
	}
}

// convert writes our format; loaded back it is the Manifest and Policy
// that the PhysMCP files load into.
func TestPhysMCPConvertRoundTrip(t *testing.T) {
	for _, dir := range []string{"testdata/physmcp/spec52", "testdata/physmcp/spec53", "testdata/physmcp/spec6", "testdata/physmcp/extensions", "testdata/physmcp/buses"} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			direct, dpol := loadPhysMCP(t, dir)
			mpath := filepath.Join(dir, PhysMCPManifestName)
			data, _ := os.ReadFile(mpath)
			ppath := filepath.Join(dir, PhysMCPPolicyName)
			pdata, err := os.ReadFile(ppath)
			if err != nil {
				pdata = nil
			}
			man, pol, err := ConvertPhysMCP(mpath, data, ppath, pdata, "ours.policy.yml")
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			if err := os.WriteFile(filepath.Join(out, "ours.yml"), man, 0o644); err != nil {
				t.Fatal(err)
			}
			if pol != nil {
				if err := os.WriteFile(filepath.Join(out, "ours.policy.yml"), pol, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ours, err := Load(filepath.Join(out, "ours.yml"))
			if err != nil {
				t.Fatalf("converted manifest: %v\n%s", err, man)
			}
			if ours.physmcp != nil {
				t.Fatal("our format loaded as PhysMCP")
			}
			d := *direct
			d.File, d.physmcp, d.Policy = ours.File, nil, ours.Policy
			if direct.Policy == PolicyNone && ours.Policy != PolicyNone {
				t.Errorf("policy: PhysMCP none, converted %q", ours.Policy)
			}
			if !reflect.DeepEqual(&d, ours) {
				t.Fatalf("converted manifest differs:\nPhysMCP %+v\nours    %+v", d, *ours)
			}
			if dpol == nil {
				if pol != nil {
					t.Fatal("a policy converted where PhysMCP loads none")
				}
				return
			}
			opol, err := LoadPolicy(ours.PolicyFile(), ours)
			if err != nil {
				t.Fatalf("converted policy: %v\n%s", err, pol)
			}
			dp := *dpol
			dp.File = opol.File
			if !reflect.DeepEqual(unplaced(&dp), unplaced(opol)) {
				t.Fatalf("converted policy differs:\nPhysMCP %+v\nours    %+v", dp, *opol)
			}
		})
	}
}

// Every PhysMCP key this gateway cannot honour is refused at its place,
// naming the field and why; nothing is silently dropped.
func TestPhysMCPUnsupportedKeys(t *testing.T) {
	const head = "physmcp_version: \"0.1\"\ndevice: {id: d1, type: t, location: {zone: z}}\ncapabilities:\n"
	cap := func(extra string) string {
		return head + "  - name: c\n    kind: read\n    description: d\n    data_type: float\n    unit: celsius\n    semantic_tags: [x]\n" + extra
	}
	pct := func(extra string) string { return strings.Replace(cap(extra), "unit: celsius", "unit: percent", 1) }
	volt := func(extra string) string { return strings.Replace(cap(extra), "unit: celsius", "unit: volt", 1) }
	i2c := "    binding: {type: i2c, address: \"0x48:reg=0x00\"}\n"
	cases := []struct {
		name, yaml string
		want       error
		where      string // "line:col field"
	}{
		{"opcua", cap("    binding: {type: opcua, address: \"ns=2;s=x\"}\n"), ErrUnsupported, "10:21 capabilities[0].binding.type"},
		{"bacnet", cap("    binding: {type: bacnet, address: \"x\"}\n"), ErrUnsupported, "10:21 capabilities[0].binding.type"},
		{"virtual", cap("    binding: {type: virtual, address: \"x\"}\n"), ErrUnsupported, "10:21 capabilities[0].binding.type"},
		// pwm: only a Pi's hardware PWM pins; the duty cycle in percent.
		{"pwm pin without hardware PWM", pct("    binding: {type: pwm, address: \"pin=25:freq=25000\"}\n"), ErrUnsupported, "10:35 capabilities[0].binding.address"},
		{"pwm without pin", pct("    binding: {type: pwm, address: \"freq=25000\"}\n"), ErrMissing, "10:35 capabilities[0].binding.address"},
		{"pwm freq 0", pct("    binding: {type: pwm, address: \"pin=18:freq=0\"}\n"), ErrRange, "10:35 capabilities[0].binding.address"},
		{"pwm in celsius", cap("    binding: {type: pwm, address: \"pin=18\"}\n"), ErrNotAllowed, "8:11 capabilities[0].unit"},
		{"pwm extra part", pct("    binding: {type: pwm, address: \"pin=18:mode=x\"}\n"), ErrUnsupported, "10:35 capabilities[0].binding.address"},
		{"pwm extension of another bus", pct("    binding: {type: pwm, address: \"pin=18\", scale: 2}\n"), ErrNotAllowed, "10:52 capabilities[0].binding.scale"},
		// adc (an ADS1x15) and spi (an MCP3008): read-only volts.
		{"adc pin address", volt("    binding: {type: adc, address: \"pin=1\"}\n"), ErrUnsupported, "10:35 capabilities[0].binding.address"},
		{"adc without ch", volt("    binding: {type: adc, address: \"0x48\"}\n"), ErrMissing, "10:35 capabilities[0].binding.address"},
		{"adc ch 4", volt("    binding: {type: adc, address: \"0x48:ch=4\"}\n"), ErrRange, "10:35 capabilities[0].binding.address"},
		{"adc not an ads1x15 address", volt("    binding: {type: adc, address: \"0x40:ch=0\"}\n"), ErrRange, "10:35 capabilities[0].binding.address"},
		{"adc chip", volt("    binding: {type: adc, address: \"0x48:ch=0\", chip: ads1234}\n"), ErrUnknownValue, "10:54 capabilities[0].binding.chip"},
		{"adc in celsius", cap("    binding: {type: adc, address: \"0x48:ch=0\"}\n"), ErrNotAllowed, "8:11 capabilities[0].unit"},
		{"adc do", head + "  - {name: c, kind: do, description: d, data_type: float, unit: volt, semantic_tags: [x], side_effects: [s], binding: {type: adc, address: \"0x48:ch=0\"}}\n", ErrNotAllowed, "4:21 capabilities[0].kind"},
		{"spi without ch", volt("    binding: {type: spi, address: \"cs=0\"}\n"), ErrMissing, "10:35 capabilities[0].binding.address"},
		{"spi ch 8", volt("    binding: {type: spi, address: \"ch=8\"}\n"), ErrRange, "10:35 capabilities[0].binding.address"},
		{"spi cs 2", volt("    binding: {type: spi, address: \"cs=2:ch=0\"}\n"), ErrRange, "10:35 capabilities[0].binding.address"},
		// mqtt: a state topic without wildcards; float, int or bool.
		{"mqtt wildcard", cap("    binding: {type: mqtt, address: \"garden/#\"}\n"), ErrType, "10:36 capabilities[0].binding.address"},
		{"mqtt empty topic", cap("    binding: {type: mqtt, address: \":path=a\"}\n"), ErrType, "10:36 capabilities[0].binding.address"},
		{"mqtt enum", head + "  - {name: c, kind: do, description: d, data_type: enum, enum_values: [a, b], semantic_tags: [x], side_effects: [s], binding: {type: mqtt, address: \"t\"}}\n", ErrUnsupported, "4:52 capabilities[0].data_type"},
		{"mqtt command_topic on a read", cap("    binding: {type: mqtt, address: \"t\", command_topic: t/set}\n"), ErrNotAllowed, "10:56 capabilities[0].binding.command_topic"},
		{"uart", cap("    binding: {type: uart, address: \"/dev/ttyS0\"}\n"), ErrUnsupported, "10:21 capabilities[0].binding.type"},
		{"unknown binding", cap("    binding: {type: can, address: \"x\"}\n"), ErrUnknownValue, "10:21 capabilities[0].binding.type"},
		{"gpio analog", head + "  - {name: c, kind: read, description: d, data_type: bool, semantic_tags: [x], binding: {type: gpio, address: \"pin=14:mode=analog\"}}\n", ErrUnsupported, "4:111 capabilities[0].binding.address"},
		{"i2c extra part", cap("    binding: {type: i2c, address: \"0x48:reg=0x00:len=2\"}\n"), ErrUnsupported, "10:35 capabilities[0].binding.address"},
		{"i2c timeout", cap(i2c + "    timeout_ms: 50\n"), ErrUnsupported, "11:17 capabilities[0].timeout_ms"},
		{"string", head + "  - {name: c, kind: read, description: d, data_type: string, semantic_tags: [x], binding: {type: i2c, address: \"0x48:reg=0\"}}\n", ErrUnsupported, "4:54 capabilities[0].data_type"},
		{"adopted_from", cap(i2c + "    adopted_from: {source_address: \"serial:/dev/ttyS0:addr=0x10\", source_protocol: serial}\n"), ErrUnsupported, "11:19 capabilities[0].adopted_from"},
		{"cacheable false", cap(i2c + "    cacheable: false\n"), ErrUnsupported, "11:16 capabilities[0].cacheable"},
		{"seed_peers", head[:len(head)-len("capabilities:\n")] + "network: {mesh: {seed_peers: [10.0.0.1]}}\ncapabilities: []\n", ErrUnsupported, "3:30 network.mesh.seed_peers"},
		{"remote_sink", head + "  []\naudit: {remote_sink: {type: syslog, address: x}}\n", ErrUnsupported, "5:22 audit.remote_sink"},
		{"rate_limit", head + "  - {name: c, kind: do, description: d, data_type: bool, semantic_tags: [x], side_effects: [s], binding: {type: gpio, address: \"pin=4\"}, rate_limit: \"6 per hour\"}\n", ErrType, "4:150 capabilities[0].rate_limit"},
		{"modbus input do", head + "  - {name: c, kind: do, description: d, data_type: int, unit: x, semantic_tags: [x], side_effects: [s], binding: {type: modbus, address: \"slave=1:reg=30001\"}}\n", ErrNotAllowed, "4:138 capabilities[0].binding.address"},
		{"do without side_effects", head + "  - {name: c, kind: do, description: d, data_type: bool, semantic_tags: [x], binding: {type: gpio, address: \"pin=4\"}}\n", ErrMissing, "4:5 capabilities[0].side_effects"},
		// Problems the translation's validation finds are reported at the
		// PhysMCP key they come from.
		{"float without unit", head + "  - {name: c, kind: read, description: d, data_type: float, semantic_tags: [x], binding: {type: i2c, address: \"0x48:reg=0\"}}\n", ErrMissing, "4:5 capabilities[0]"},
		{"pin used twice", head + "  - {name: a, kind: read, description: d, data_type: bool, semantic_tags: [x], binding: {type: gpio, address: \"pin=4\"}}\n" +
			"  - {name: b, kind: do, description: d, data_type: bool, semantic_tags: [x], side_effects: [s], binding: {type: gpio, address: \"pin=4\"}}\n", ErrDuplicate, "5:128 capabilities[1].binding.address"},
		{"unknown key", cap(i2c + "    colour: red\n"), ErrUnknownField, "11:5 capabilities[0].colour"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("m.yml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.yaml)
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(e, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			got := strings.TrimPrefix(e.Pos.String(), "m.yml:") + " " + e.Field
			if got != tc.where {
				t.Fatalf("at %q, want %q (%v)", got, tc.where, err)
			}
		})
	}
}

// Modbus addresses: Modicon numbers pick the table and the 0-based
// address; with type= a number below 10000 is the address itself.
func TestPhysMCPModbusAddress(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		table Table
		reg   uint16
	}{
		{"slave=1:reg=40001", modbusconf.TableHolding, 0},
		{"slave=1:reg=40001:type=holding", modbusconf.TableHolding, 0},
		{"slave=1:reg=30005", modbusconf.TableInput, 4},
		{"slave=1:reg=10003", modbusconf.TableDiscrete, 2},
		{"slave=1:reg=7", modbusconf.TableCoil, 6},
		{"slave=1:reg=7:type=coil", modbusconf.TableCoil, 7},
		{"slave=1:reg=7:type=holding", modbusconf.TableHolding, 7},
		{"slave=2:reg=0x10:type=input", modbusconf.TableInput, 16},
	} {
		y := "physmcp_version: \"0.1\"\ndevice: {id: d, type: t, location: {zone: z}}\ncapabilities:\n" +
			"  - {name: c, kind: read, description: d, data_type: int, unit: x, semantic_tags: [x], binding: {type: modbus, address: \"" + tc.addr + "\"}}\n"
		if tc.table.IsBits() {
			y = strings.Replace(y, "data_type: int, unit: x", "data_type: bool", 1)
		}
		m, err := Parse("m.yml", []byte(y))
		if err != nil {
			t.Fatalf("%s: %v", tc.addr, err)
		}
		r := m.Devices[0].ModbusRegisters[0]
		if r.Table != tc.table || r.Address != tc.reg {
			t.Errorf("%s: %s %d, want %s %d", tc.addr, r.Table, r.Address, tc.table, tc.reg)
		}
	}
}

func TestPhysMCPPolicyUnsupported(t *testing.T) {
	m, _ := loadPhysMCP(t, "testdata/physmcp/spec53")
	cases := []struct{ name, yaml, where string }{
		{"warn", "physmcp_policy_version: \"0.1\"\ncapabilities:\n  do_setpoint_0:\n    rules:\n      - {type: range_guard, min: 19, on_violation: warn}\n", "5:52 capabilities.do_setpoint_0.rules[0].on_violation"},
		{"emergency unaudited", "physmcp_policy_version: \"0.1\"\nemergency: {override_permission: admin, override_token_ttl_seconds: 300, audit_all_overrides: false}\n", "2:95 emergency.audit_all_overrides"},
		{"audit_all", "physmcp_policy_version: \"0.1\"\ndefaults: {audit_all: false}\n", "2:23 defaults.audit_all"},
		{"quorum allow", "physmcp_policy_version: \"0.1\"\ncapabilities:\n  do_setpoint_0:\n    rules: [{type: quorum, min_peers: 2, on_failure: allow}]\n", "4:54 capabilities.do_setpoint_0.rules[0].on_failure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePolicy("p.yml", []byte(tc.yaml), m)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(e, ErrUnsupported) {
				t.Fatalf("got %v, want ErrUnsupported", err)
			}
			if got := strings.TrimPrefix(e.Pos.String(), "p.yml:") + " " + e.Field; got != tc.where {
				t.Fatalf("at %q, want %q", got, tc.where)
			}
		})
	}
}

func FuzzParsePhysMCP(f *testing.F) {
	seedFiles(f, "testdata/physmcp/spec52/physmcp.manifest.yml", "testdata/physmcp/spec53/physmcp.manifest.yml", "testdata/physmcp/spec53/physmcp.policy.yml")
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("", data)
		if (m == nil) == (err == nil) {
			t.Fatalf("manifest %v and error %v", m != nil, err)
		}
		if IsPhysMCP(data) {
			checkErrors(t, err)
		}
		_, _ = ParsePolicy("", data, m)
		_, _, _ = ConvertPhysMCP("", data, "", data, "p.yml")
	})
}

// PhysMCP's pwm, adc, spi and mqtt addresses map onto the pwm, ads1x15,
// mcp3008 and mqtt models: a Pi's PWM pin to its pwmchip0 channel, an adc
// channel to an ADS1x15 input, an spi ch= to an MCP3008 channel on the
// chip-select's spidev, an mqtt topic to a state topic (and, for a do, a
// command topic).
func TestPhysMCPBusBindings(t *testing.T) {
	m, _ := loadPhysMCP(t, "testdata/physmcp/buses")
	devOf := map[string]Device{}
	for _, d := range m.Devices {
		devOf[d.Name] = d
	}
	busOf := map[string]Bus{}
	for _, b := range m.Buses {
		busOf[b.Name] = b
	}
	read := map[string]Capability{}
	for _, c := range m.Capabilities {
		read[c.Name] = c
	}
	dev := func(c string) Device { return devOf[read[c].Read.Device] }

	if d := dev("pump_speed"); d.Model != ModelPWM || d.Channel != 0 || d.Frequency != 25000 || read["pump_speed"].Read.Channel != "duty" {
		t.Errorf("pin=18:freq=25000: %+v", d)
	}
	if c := read["pump_speed"]; c.Do == nil || *c.Do.Constraints.Max != 80 {
		t.Errorf("pump_speed do (range 0..100 narrowed by the range_guard to 80): %+v", c.Do)
	}
	if d := dev("fan_duty"); d.Model != ModelPWM || d.Channel != 1 || d.Frequency != DefaultPhysMCPPWMFrequency || busOf[d.Bus].Device != "/sys/class/pwm/pwmchip0" {
		t.Errorf("pin=13 with bus_device: %+v (bus %+v)", d, busOf[d.Bus])
	}
	if d := dev("bed1_probe"); d.Model != ModelADS1115 || d.Address != 0x48 || len(d.Inputs) != 1 || d.Inputs[0].Input != "a0" || d.Inputs[0].Name != "bed1_probe" {
		t.Errorf("0x48:ch=0: %+v", d)
	}
	if c := read["bed1_probe"]; c.Unit != "V" || c.Health.Plausible == nil || *c.Health.Plausible != (Range{0, 3.3}) {
		t.Errorf("bed1_probe: unit %q health %+v", c.Unit, c.Health)
	}
	if d := dev("bed2_probe"); d.Model != ModelADS1015 || d.Address != 0x49 || d.Inputs[0].Input != "a3" || d.Inputs[0].FullScale != 2.048 || busOf[d.Bus].Device != "1" {
		t.Errorf("0x49:ch=3 chip ads1015: %+v (bus %+v)", d, busOf[d.Bus])
	}
	if d := dev("tank_probe"); d.Model != ModelMCP3008 || d.VRef != 3.3 || busOf[d.Bus].Device != "/dev/spidev0.1" || read["tank_probe"].Read.Channel != "ch5" {
		t.Errorf("cs=1:ch=5: %+v (bus %+v)", d, busOf[d.Bus])
	}
	door := dev("door_open")
	if door.Model != ModelMQTT || door.MQTT == nil || door.MQTT.Preset != "" || door.MQTT.Availability != "zigbee2mqtt/shed_door/availability" ||
		len(door.MQTT.Channels) != 1 || door.MQTT.Channels[0].State != "zigbee2mqtt/shed_door" || door.MQTT.Channels[0].Path != "contact" || door.MQTT.Channels[0].Command != "" {
		t.Errorf("zigbee2mqtt/shed_door:path=contact: %+v", door.MQTT)
	}
	valve := dev("valve")
	if valve.MQTT == nil || len(valve.MQTT.Channels) != 1 || valve.MQTT.Channels[0].State != "stat/valve/POWER" || valve.MQTT.Channels[0].Command != "cmnd/valve/POWER" || busOf[valve.Bus].MQTT.Broker != "mqtt://127.0.0.1:1883" {
		t.Errorf("stat/valve/POWER with command_topic: %+v", valve.MQTT)
	}
	// A do without command_topic publishes on <topic>/set.
	y := "physmcp_version: \"0.1\"\ndevice: {id: d, type: t, location: {zone: z}}\ncapabilities:\n" +
		"  - {name: c, kind: do, description: d, data_type: bool, semantic_tags: [x], side_effects: [s], binding: {type: mqtt, address: \"garden/valve1\"}}\n"
	m2, err := Parse("m.yml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if ch := m2.Devices[0].MQTT.Channels[0]; ch.State != "garden/valve1" || ch.Command != "garden/valve1/set" {
		t.Errorf("default command topic: %+v", ch)
	}
}

// The spec's §6 policy as written, identity and emergency blocks included,
// loads: its keyless JWT provider is noted (its JWTs are refused), its
// emergency block becomes the policy's Emergency; convert writes durations
// and addresses as people write them.
func TestPhysMCPSpec6(t *testing.T) {
	m, p := loadPhysMCP(t, "testdata/physmcp/spec6")
	if p.Emergency == nil || !reflect.DeepEqual(p.Emergency.Roles, []string{"admin"}) || p.Emergency.TTL != 5*time.Minute ||
		p.Emergency.Pos.Line != 60 {
		t.Fatalf("emergency: %+v", p.Emergency)
	}
	if len(p.Identity.Providers) != 1 || p.Identity.Providers[0].Type != ProviderMTLS {
		t.Fatalf("identity: %+v", p.Identity)
	}
	var noted bool
	for _, n := range p.Notes {
		noted = noted || strings.Contains(n.Msg, "names no keys") && n.Pos.Line == 52
	}
	if !noted {
		t.Errorf("notes %v: none says the jwt provider at line 52 names no keys", p.Notes)
	}
	for _, c := range m.Capabilities {
		if c.Name == "setpoint_0" && (c.Type != TypeNumber) {
			t.Errorf("setpoint_0: %+v", c)
		}
	}
	for _, d := range m.Devices {
		for _, r := range d.ModbusRegisters {
			if r.Name == "setpoint_0" && r.Type != "float32" {
				t.Errorf("setpoint_0's register is %s, want float32 (22.5 °C is written as is)", r.Type)
			}
		}
	}
	mdata, err := os.ReadFile("testdata/physmcp/spec6/physmcp.manifest.yml")
	if err != nil {
		t.Fatal(err)
	}
	pdata, err := os.ReadFile("testdata/physmcp/spec6/physmcp.policy.yml")
	if err != nil {
		t.Fatal(err)
	}
	man, pol, err := ConvertPhysMCP("m.yml", mdata, "p.yml", pdata, "x.policy.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"address: 0x48\n", "address: 0x00\n", "timeout: 2s\n", "ttl: 2s\n"} {
		if !strings.Contains(string(man), want) {
			t.Errorf("converted manifest lacks %q:\n%s", want, man)
		}
	}
	for _, want := range []string{"cooldown: 30s\n", "per: 1h\n", "ttl: 5m\n", "emergency:\n"} {
		if !strings.Contains(string(pol), want) {
			t.Errorf("converted policy lacks %q:\n%s", want, pol)
		}
	}
}

// A quorum larger than the fleet can never allow; one the fleet meets is
// no warning.
func TestNeverAllowed(t *testing.T) {
	_, p := loadPhysMCP(t, "testdata/physmcp/spec6")
	if n := p.NeverAllowed(1); len(n) != 1 || n[0].Pos.Line != 21 || !strings.Contains(n[0].Msg, "do_setpoint_0 is never allowed") {
		t.Errorf("lone gateway: %v", n)
	}
	if n := p.NeverAllowed(3); len(n) != 0 {
		t.Errorf("fleet of 3: %v", n)
	}
}

// unplaced is a copy of p without the positions and notes, which say
// where in which file (the PhysMCP one or ours) a rule was written.
func unplaced(p *Policy) *Policy {
	q := *p
	q.Notes = nil
	q.Actions = map[string]*ActionPolicy{}
	for k, a := range p.Actions {
		b := *a
		if a.Quorum != nil {
			b.Quorum = &Quorum{MinPeers: a.Quorum.MinPeers}
		}
		q.Actions[k] = &b
	}
	if p.Emergency != nil {
		e := *p.Emergency
		e.Pos = Position{}
		q.Emergency = &e
	}
	if p.Identity != nil {
		id := Identity{}
		for _, pr := range p.Identity.Providers {
			pr.Pos = Position{}
			id.Providers = append(id.Providers, pr)
		}
		q.Identity = &id
	}
	return &q
}

// TestPhysMCPPolicyGolden holds the errors of the PhysMCP policies under
// testdata/physmcp/policy_errors/<case>/, loaded against the §5.3
// manifest, in want.err beside each.
func TestPhysMCPPolicyGolden(t *testing.T) {
	m, _ := loadPhysMCP(t, "testdata/physmcp/spec53")
	files, _ := filepath.Glob(filepath.Join("testdata", "physmcp", "policy_errors", "*", "physmcp.policy.yml"))
	if len(files) == 0 {
		t.Fatal("no PhysMCP policy golden cases")
	}
	for _, f := range files {
		compareGolden(t, f, func(data []byte) (bool, error) {
			p, err := ParsePolicy("physmcp.policy.yml", data, m)
			return p != nil, err
		})
	}
}
