package manifests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// PhysMCP v0.1 manifests (physmcp.manifest.yml, §5) and policies
// (physmcp.policy.yml, §6) are accepted as they are: Parse and ParsePolicy
// recognise them by their keys, translate them into this package's format
// (the text `promcp-device convert` writes) and validate that, so the
// gateway serves the same Manifest and Policy values either way. A key that
// has no counterpart here is refused with ErrUnsupported at its position.

// ErrUnsupported is a PhysMCP key or value that this gateway cannot honour
// (an OPC UA binding, a remote audit sink): refused rather than ignored.
var ErrUnsupported = errors.New("not supported")

// PhysMCPManifestName and PhysMCPPolicyName are PhysMCP's file names; the
// policy is looked for beside the manifest.
const (
	PhysMCPManifestName = "physmcp.manifest.yml"
	PhysMCPPolicyName   = "physmcp.policy.yml"
)

var (
	pmTopKeys      = []string{"physmcp_version", "device", "network", "capabilities", "audit"}
	pmDeviceKeys   = []string{"id", "type", "vendor", "model", "firmware_version", "hardware_revision", "location", "certification"}
	pmLocationKeys = []string{"zone", "area", "coordinates", "description"}
	pmNetworkKeys  = []string{"protocols", "mesh"}
	pmMeshKeys     = []string{"enabled", "seed_peers", "max_peers", "heartbeat_interval_ms"}
	pmAuditKeys    = []string{"enabled", "retention_days", "remote_sink"}
	pmCapKeys      = []string{"name", "kind", "description", "binding", "data_type", "unit", "range", "enum_values",
		"precision", "sample_rate_hz", "semantic_tags", "side_effects", "rate_limit", "requires_permission",
		"requires_quorum", "quorum_size", "cooldown_ms", "timeout_ms", "cacheable", "cache_ttl_ms", "adopted_from",
		// extensions of ours, beside PhysMCP's keys
		"compensable", "safe_value", "settle_ms"}
	// pmBindingKeys are PhysMCP's type and address and our extensions for
	// what a bus needs and PhysMCP does not say.
	pmBindingKeys = []string{"type", "address", "bus_device", "bus_address", "register_type", "byte_order",
		"scale", "offset", "active_low", "pull", "chip", "full_scale", "vref", "command_topic", "availability"}
	pmBindingTypes = []string{"i2c", "spi", "gpio", "adc", "pwm", "uart", "modbus", "opcua", "bacnet", "mqtt", "virtual"}
	pmPermissions  = []string{"none", "operator", "supervisor", "admin"}
)

// pmUnits maps PhysMCP's spelled-out units to the symbols of this format.
var pmUnits = map[string]string{
	"celsius": "°C", "fahrenheit": "°F", "kelvin": "K", "percent": "%", "pascal": "Pa", "hectopascal": "hPa",
	"kilopascal": "kPa", "bar": "bar", "lux": "lx", "volt": "V", "millivolt": "mV", "ampere": "A",
	"milliampere": "mA", "watt": "W", "kilowatt": "kW", "kilowatt_hour": "kWh", "hertz": "Hz", "ppm": "ppm",
	"meter": "m", "millimeter": "mm", "liter": "L", "liters_per_minute": "L/min", "second": "s",
}

// pmUnsupportedBinding says why each binding type we have no driver for
// is refused.
var pmUnsupportedBinding = map[string]string{
	"uart":    "a serial instrument needs a request and a response pattern, which a PhysMCP address cannot say: use a serial_line device in our format",
	"opcua":   "this gateway has no OPC UA client",
	"bacnet":  "this gateway has no BACnet client",
	"virtual": "a virtual capability has no device behind it; this gateway serves only values it reads from a bus (use serve --sim to try a manifest without hardware)",
}

// pmRules are the policy keys a PhysMCP manifest puts on a do capability.
type pmRules struct {
	RateLimit  *RateLimit
	Permission string
	Quorum     int
	Cooldown   time.Duration
}

// physmcpInfo is what a PhysMCP manifest leaves for its policy: the rules
// its capabilities declare, by do tool, and the range guards its policy
// file folded into the constraints.
type physmcpInfo struct {
	rules map[string]pmRules
}

// IsPhysMCP reports whether data is a PhysMCP manifest: a mapping with
// physmcp_version, or with device and capabilities and no version.
func IsPhysMCP(data []byte) bool {
	keys := topKeys(data)
	return keys["physmcp_version"] || keys["device"] && keys["capabilities"] && !keys["version"]
}

// IsPhysMCPPolicy reports whether data is a PhysMCP policy file.
func IsPhysMCPPolicy(data []byte) bool {
	keys := topKeys(data)
	return keys["physmcp_policy_version"] || keys["time_windows"] || keys["capabilities"] && !keys["version"] && !keys["device"]
}

func topKeys(data []byte) map[string]bool {
	out := map[string]bool{}
	f, err := parseBytes(data)
	if err != nil || len(f.Docs) == 0 || f.Docs[0] == nil {
		return out
	}
	if m, ok := f.Docs[0].Body.(*ast.MappingNode); ok {
		for _, mv := range m.Values {
			if mv != nil && mv.Key != nil {
				out[keyString(mv.Key)] = true
			}
		}
	}
	return out
}

// ConvertPhysMCP translates a PhysMCP manifest (file, data) and, when
// policy is not nil, its policy (policyFile, policy) into this package's
// format: the manifest's YAML and the policy's (nil when there is no
// policy). The manifest names the policy as policyName. Every problem is an
// *Error positioned in the PhysMCP file it comes from.
func ConvertPhysMCP(file string, data []byte, policyFile string, policy []byte, policyName string) (manifest, pol []byte, err error) {
	var guards map[string]rangeGuard
	if policy != nil {
		guards, err = physmcpRangeGuards(policyFile, policy)
		if err != nil {
			return nil, nil, err
		}
	}
	t, doc, err := translatePhysMCP(file, data, guards, policyName)
	if err != nil {
		return nil, nil, err
	}
	info := t.info
	if manifest, err = yaml.Marshal(doc); err != nil {
		return nil, nil, fmt.Errorf("convert %s: %w", file, err)
	}
	if _, err := Parse(file, manifest); err != nil {
		return nil, nil, t.relocate(err)
	}
	if policy != nil {
		pdoc, err := translatePhysMCPPolicy(policyFile, policy, info)
		if err != nil {
			return nil, nil, err
		}
		if pol, err = yaml.Marshal(pdoc); err != nil {
			return nil, nil, fmt.Errorf("convert %s: %w", policyFile, err)
		}
	}
	return manifest, pol, nil
}

// parsePhysMCP is Parse for a PhysMCP manifest: it translates, reading the
// policy beside file (for its range guards), and validates the result. A
// problem the validation finds is reported at the PhysMCP key it comes
// from (see pmTranslator.relocate).
func parsePhysMCP(file string, data []byte) (*Manifest, error) {
	policyFile := filepath.Join(filepath.Dir(file), PhysMCPPolicyName)
	var guards map[string]rangeGuard
	if file != "" {
		if pdata, err := os.ReadFile(policyFile); err == nil && IsPhysMCPPolicy(pdata) {
			if guards, err = physmcpRangeGuards(policyFile, pdata); err != nil {
				return nil, err
			}
		}
	}
	t, doc, err := translatePhysMCP(file, data, guards, PhysMCPPolicyName)
	if err != nil {
		return nil, err
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", file, err)
	}
	m, err := Parse(file, out)
	if err != nil {
		return nil, t.relocate(err)
	}
	m.File = file
	m.physmcp = t.info
	return m, nil
}

// relocate moves the problems found in the translation to the PhysMCP keys
// they come from: a capability's to the capability (or its key of the same
// name), a device's or bus's to the binding that made it. Each names the
// PhysMCP field and, in its message, the field of the translation.
func (t *pmTranslator) relocate(err error) error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	p := &problems{file: t.d.p.file}
	for _, e := range joined.Unwrap() {
		pe, ok := e.(*Error)
		if !ok {
			return err
		}
		field := ""
		switch {
		case strings.HasPrefix(pe.Field, "capabilities["):
			i := strings.Index(pe.Field, "]")
			field = pe.Field[:i+1]
			if rest := pe.Field[i+1:]; rest != "" && t.d.pos[field+rest] != (Position{}) {
				field += rest
			}
		case strings.HasPrefix(pe.Field, "devices["), strings.HasPrefix(pe.Field, "buses["):
			var k int
			kind, _, _ := strings.Cut(pe.Field, "[")
			if _, serr := fmt.Sscanf(pe.Field[len(kind):], "[%d]", &k); serr == nil {
				if src := t.made[kind][k]; src != "" {
					field = src
				}
			}
		}
		pos := t.d.at(field)
		if field == "" {
			field = "capabilities"
		}
		sentinel := ErrNotAllowed
		for _, s := range []error{ErrSyntax, ErrType, ErrUnknownField, ErrUnknownValue, ErrMissing, ErrDuplicate,
			ErrBadReference, ErrBadName, ErrRange, ErrNotAllowed, ErrUnsupported} {
			if errors.Is(pe.Err, s) {
				sentinel = s
				break
			}
		}
		// Lines of the translation mean nothing in the PhysMCP file.
		detail := firstAt.ReplaceAllString(strings.TrimPrefix(pe.Err.Error(), sentinel.Error()), "")
		p.add(pos, field, sentinel, ":%s (as translated: %s)", detail, pe.Field)
	}
	return p.err()
}

type pmBus struct {
	name string
	item yaml.MapSlice
}

type pmDevice struct {
	name   string
	fields yaml.MapSlice
	regs   []yaml.MapSlice
	inputs []yaml.MapSlice // an ADC's inputs; an mqtt device's channels
	// mqttAvail is an mqtt device's availability topic.
	mqttAvail string
	timeout   time.Duration
}

// translatePhysMCP turns a PhysMCP manifest into our manifest's document.
func translatePhysMCP(file string, data []byte, guards map[string]rangeGuard, policyName string) (*pmTranslator, yaml.MapSlice, error) {
	p := &problems{file: file}
	root, ok := parseYAML(p, data)
	if !ok {
		return nil, nil, p.err()
	}
	d := newDecoder(p, root)
	t := &pmTranslator{d: d, guards: guards, info: &physmcpInfo{rules: map[string]pmRules{}}, devIndex: map[string]int{}, busIndex: map[string]int{},
		made: map[string][]string{}}
	doc := t.manifest(root, policyName)
	if err := p.err(); err != nil {
		return nil, nil, err
	}
	return t, doc, nil
}

type pmTranslator struct {
	d        *decoder
	guards   map[string]rangeGuard
	info     *physmcpInfo
	buses    []pmBus
	busIndex map[string]int
	devices  []*pmDevice
	devIndex map[string]int
	// capTimeout is the timeout_ms of the capability being translated.
	capTimeout time.Duration
	// made holds, for "devices" and "buses", the PhysMCP binding that made
	// each, in the translation's order.
	made map[string][]string
	// bindingPath is the path of the address being translated.
	bindingPath string
}

func (t *pmTranslator) manifest(root ast.Node, policyName string) yaml.MapSlice {
	d := t.d
	o, ok := d.document(root, pmTopKeys, "physmcp_version and capabilities")
	if !ok {
		return nil
	}
	if v, ok := o.strOK("physmcp_version"); ok && v != "0.1" {
		o.add("physmcp_version", ErrUnknownValue, "%q (want \"0.1\")", v)
	}
	o.require("physmcp_version", `"0.1"`)
	doc := yaml.MapSlice{{Key: "version", Value: 1}}
	var zone string
	if dev, ok := o.sub("device", pmDeviceKeys); ok {
		if id, ok := d.name(dev.f["id"], dev.at("id")); ok {
			doc = append(doc, yaml.MapItem{Key: "gateway", Value: id})
		}
		dev.require("id", "the device id, lower_snake_case")
		var desc []string
		if s := dev.requiredStr("type", "the device category, such as hvac_controller"); s != "" {
			desc = append(desc, s)
		}
		for _, k := range []string{"vendor", "model", "firmware_version", "hardware_revision"} {
			if s := dev.str(k); s != "" {
				desc = append(desc, k+" "+s)
			}
		}
		if loc, ok := dev.sub("location", pmLocationKeys); ok {
			zone, _ = d.name(loc.f["zone"], loc.at("zone"))
			loc.require("zone", "the zone, lower_snake_case")
			if s := loc.str("area"); s != "" {
				desc = append(desc, "area "+s)
			}
			if s := loc.str("description"); s != "" {
				desc = append(desc, s)
			}
			if c, ok := loc.sub("coordinates", []string{"x", "y", "z"}); ok {
				desc = append(desc, fmt.Sprintf("at x=%v y=%v z=%v", c.num("x"), c.num("y"), c.num("z")))
			}
		}
		dev.require("location", "location with a zone")
		if c, ok := dev.sub("certification", []string{"physmcp_certified", "cert_id", "cert_expiry"}); ok {
			c.boolean("physmcp_certified")
			c.str("cert_id")
			c.str("cert_expiry")
		}
		if len(desc) > 0 {
			doc = append(doc, yaml.MapItem{Key: "description", Value: strings.Join(desc, "; ")})
		}
	}
	o.require("device", "the device's id, type and location")
	t.network(o)
	t.audit(o)
	caps := t.capabilities(o, zone)
	if len(t.info.rules) == 0 {
		policyName = PolicyNone // nothing to act on: no policy needed
	}
	doc = append(doc, yaml.MapItem{Key: "policy", Value: policyName})
	o.require("capabilities", "the read and do capabilities")
	if d.p.err() != nil {
		return nil
	}
	var buses []yaml.MapSlice
	for _, b := range t.buses {
		buses = append(buses, b.item)
	}
	var devs []yaml.MapSlice
	for _, dv := range t.devices {
		f := slices.Clone(dv.fields)
		if dv.timeout > 0 {
			f = append(f, yaml.MapItem{Key: "timeout", Value: dv.timeout.String()})
		}
		if len(dv.regs) > 0 {
			f = append(f, yaml.MapItem{Key: "registers", Value: dv.regs})
		}
		switch {
		case slices.Contains(f, yaml.MapItem{Key: "model", Value: "mqtt"}):
			mq := yaml.MapSlice{}
			if dv.mqttAvail != "" {
				mq = append(mq, yaml.MapItem{Key: "availability", Value: dv.mqttAvail})
			}
			f = append(f, yaml.MapItem{Key: "mqtt", Value: append(mq, yaml.MapItem{Key: "channels", Value: dv.inputs})})
		case len(dv.inputs) > 0:
			f = append(f, yaml.MapItem{Key: "inputs", Value: dv.inputs})
		}
		devs = append(devs, f)
	}
	return append(doc,
		yaml.MapItem{Key: "buses", Value: buses},
		yaml.MapItem{Key: "devices", Value: devs},
		yaml.MapItem{Key: "capabilities", Value: caps})
}

// network checks the transport keys. They describe how PhysMCP peers reach
// the device; this gateway is reached where serve --http or stdio says, so
// they are accepted as they are, except a mesh this gateway cannot join.
func (t *pmTranslator) network(o obj) {
	n, ok := o.sub("network", pmNetworkKeys)
	if !ok {
		return
	}
	list(n, "protocols", []string{"type", "address", "mcp_port", "role"}, func(p obj, _ *struct{}) {
		enum(p, "type", new(string), []string{"ip", "serial", "lora", "ble"}, false)
		p.str("address")
		p.integer("mcp_port")
		enum(p, "role", new(string), []string{"native", "proxy", "lite"}, false)
	})
	if m, ok := n.sub("mesh", pmMeshKeys); ok {
		m.boolean("enabled")
		if len(m.strs("seed_peers")) > 0 {
			m.add("seed_peers", ErrUnsupported, "(this gateway does not join a PhysMCP gossip mesh: its can_do answers for its own capabilities; give peers to serve --peer for quorum)")
		}
		m.integer("max_peers")
		m.integer("heartbeat_interval_ms")
	}
}

func (t *pmTranslator) audit(o obj) {
	a, ok := o.sub("audit", pmAuditKeys)
	if !ok {
		return
	}
	a.boolean("enabled")
	a.integer("retention_days")
	if a.has("remote_sink") {
		a.add("remote_sink", ErrUnsupported, "(the audit log is a local file, serve --audit FILE; ship it with the host's log tools)")
	}
}

func (t *pmTranslator) capabilities(o obj, zone string) []yaml.MapSlice {
	var out []yaml.MapSlice
	for i, n := range t.d.seq(o.f["capabilities"], "capabilities") {
		path := index("capabilities", i)
		c, ok := t.d.item(n, path, pmCapKeys)
		if !ok {
			continue
		}
		if cp := t.capability(c, zone); cp != nil {
			out = append(out, cp)
		}
	}
	return out
}

func (t *pmTranslator) capability(c obj, zone string) yaml.MapSlice {
	d := t.d
	name := c.name()
	var kind string
	enum(c, "kind", &kind, []string{"read", "do"}, true)
	desc := c.requiredStr("description", "what the capability is, for people and agents")
	var dt string
	enum(c, "data_type", &dt, []string{"float", "int", "bool", "enum", "string"}, true)
	if dt == "string" {
		c.add("data_type", ErrUnsupported, ": string (readings here are numbers, integers, booleans or enums)")
	}
	if dt == "enum" && kind == "read" {
		c.add("data_type", ErrUnsupported, ": enum on a read capability (an enum value is one a do_* sets)")
	}
	if c.has("adopted_from") {
		c.add("adopted_from", ErrUnsupported, "(this gateway proxies devices through its own buses; a Lite peer behind another transport is not adopted)")
	}
	if c.has("cacheable") && !c.boolean("cacheable") {
		c.add("cacheable", ErrUnsupported, ": false (every reading is served fresh for its ttl; set cache_ttl_ms low instead)")
	}
	tags := c.strs("semantic_tags")
	c.require("semantic_tags", "the words can_do matches, such as [temperature, ambient]")
	c.num("precision")
	c.num("sample_rate_hz")
	t.capTimeout = 0
	if ms, ok := c.integer("timeout_ms"); ok {
		if ms < 1 {
			c.add("timeout_ms", ErrRange, "%d (want 1 or more)", ms)
		} else {
			t.capTimeout = time.Duration(ms) * time.Millisecond
		}
	}

	typ := map[string]ValueType{"float": TypeNumber, "int": TypeInteger, "bool": TypeBoolean, "enum": TypeEnum}[dt]
	unit := c.str("unit")
	if u, ok := pmUnits[unit]; ok {
		unit = u
	}
	enumVals := c.strs("enum_values")

	b, ok := c.sub("binding", pmBindingKeys)
	c.require("binding", "type and address")
	var read yaml.MapSlice
	if ok && name != "" && kind != "" && dt != "" {
		read = t.binding(b, name, kind, &typ, &unit, &desc, enumVals, c)
	}

	cp := yaml.MapSlice{{Key: "name", Value: name}, {Key: "description", Value: desc}, {Key: "type", Value: string(typ)}}
	if unit != "" && typ != TypeBoolean && typ != TypeEnum {
		cp = append(cp, yaml.MapItem{Key: "unit", Value: unit})
	}
	if ms, ok := c.integer("cache_ttl_ms"); ok {
		if ms < 1 {
			c.add("cache_ttl_ms", ErrRange, "%d (want 1 or more)", ms)
		} else {
			cp = append(cp, yaml.MapItem{Key: "ttl", Value: (time.Duration(ms) * time.Millisecond).String()})
		}
	}
	if zone != "" {
		cp = append(cp, yaml.MapItem{Key: "location", Value: zone})
	}
	if len(tags) > 0 {
		cp = append(cp, yaml.MapItem{Key: "tags", Value: tags})
	}
	if read != nil {
		cp = append(cp, yaml.MapItem{Key: "read", Value: read})
	}
	rmin, rmax := c.rangeKeys()
	if kind == "read" {
		if rmin != nil && rmax != nil && typ != TypeBoolean {
			cp = append(cp, yaml.MapItem{Key: "health", Value: yaml.MapSlice{{Key: "plausible", Value: yaml.MapSlice{{Key: "min", Value: *rmin}, {Key: "max", Value: *rmax}}}}})
		} else if c.has("range") {
			c.add("range", ErrUnsupported, "(on a read, a range is the plausible span and needs both min and max)")
		}
		for _, k := range []string{"rate_limit", "requires_permission", "requires_quorum", "quorum_size", "cooldown_ms", "side_effects", "compensable", "safe_value", "settle_ms"} {
			if c.has(k) {
				c.add(k, ErrNotAllowed, "on a read capability (it belongs to kind do)")
			}
		}
		return cp
	}
	if kind != "do" {
		return cp
	}
	do := yaml.MapSlice{{Key: "tool", Value: "do_" + name}, {Key: "description", Value: desc}}
	if se := c.strs("side_effects"); len(se) > 0 {
		do = append(do, yaml.MapItem{Key: "side_effects", Value: se})
	} else {
		c.add("side_effects", ErrMissing, "side_effects (optional in PhysMCP, required here: an agent is told what a do_* changes before it acts, such as [water flows to field_2])")
	}
	if c.has("compensable") {
		do = append(do, yaml.MapItem{Key: "compensable", Value: c.boolean("compensable")})
	}
	if ms, ok := c.integer("settle_ms"); ok && ms > 0 {
		do = append(do, yaml.MapItem{Key: "settle", Value: (time.Duration(ms) * time.Millisecond).String()})
	}
	var cons yaml.MapSlice
	if g, ok := t.guards["do_"+name]; ok {
		rmin, rmax = narrow(rmin, g.min, true), narrow(rmax, g.max, false)
	}
	if rmin != nil {
		cons = append(cons, yaml.MapItem{Key: "min", Value: *rmin})
	}
	if rmax != nil {
		cons = append(cons, yaml.MapItem{Key: "max", Value: *rmax})
	}
	if typ == TypeNumber {
		if v, ok := c.numOK("precision"); ok && v > 0 {
			cons = append(cons, yaml.MapItem{Key: "step", Value: v})
		}
	}
	if typ == TypeEnum && len(enumVals) > 0 {
		cons = append(cons, yaml.MapItem{Key: "enum", Value: enumVals})
	}
	if typ == TypeInteger && dt == "enum" {
		cons = append(cons, yaml.MapItem{Key: "min", Value: 0}, yaml.MapItem{Key: "max", Value: len(enumVals) - 1}, yaml.MapItem{Key: "step", Value: 1})
	}
	if len(cons) > 0 {
		do = append(do, yaml.MapItem{Key: "constraints", Value: cons})
	}
	if c.has("safe_value") {
		do = append(do, yaml.MapItem{Key: "safe_value", Value: d.scalar(c.f["safe_value"], c.at("safe_value"))})
	}
	cp = append(cp, yaml.MapItem{Key: "do", Value: do})
	t.rules(c, "do_"+name)
	return cp
}

func narrow(a, b *float64, lower bool) *float64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case lower && *b > *a, !lower && *b < *a:
		return b
	}
	return a
}

// rangeKeys decodes range: {min, max}.
func (o obj) rangeKeys() (lo, hi *float64) {
	r, ok := o.sub("range", rangeKeys)
	if !ok {
		return nil, nil
	}
	lo, hi = r.numPtr("min"), r.numPtr("max")
	if lo != nil && hi != nil && *lo > *hi {
		r.add("min", ErrRange, "%v is above max %v", *lo, *hi)
	}
	return lo, hi
}

// rules collects the policy keys of a do capability.
func (t *pmTranslator) rules(c obj, tool string) {
	var r pmRules
	if s, ok := c.strOK("rate_limit"); ok {
		r.RateLimit = parseRate(c, "rate_limit", s)
	}
	enum(c, "requires_permission", &r.Permission, pmPermissions, false)
	size := int64(3)
	if v, ok := c.integer("quorum_size"); ok {
		if v < 1 {
			c.add("quorum_size", ErrRange, "%d (want 1 or more)", v)
		}
		size = v
	}
	if c.boolean("requires_quorum") {
		r.Quorum = int(size)
	} else if c.has("quorum_size") {
		c.add("quorum_size", ErrNotAllowed, "without requires_quorum: true")
	}
	if ms, ok := c.integer("cooldown_ms"); ok {
		if ms < 1 {
			c.add("cooldown_ms", ErrRange, "%d (want 1 or more)", ms)
		}
		r.Cooldown = time.Duration(ms) * time.Millisecond
	}
	t.info.rules[tool] = r
}

var rateRe = regexp.MustCompile(`^\s*([0-9]+)\s*/\s*([a-z]+)\s*$`)

var rateUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "second": time.Second, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hour": time.Hour, "d": 24 * time.Hour, "day": 24 * time.Hour,
}

// parseRate decodes PhysMCP's "6/hour".
func parseRate(o obj, k, s string) *RateLimit {
	m := rateRe.FindStringSubmatch(s)
	if m == nil {
		o.add(k, ErrType, `: %q (want a count per unit, such as "6/hour" or "1/min")`, s)
		return nil
	}
	n, err := strconv.Atoi(m[1])
	per, unit := rateUnits[m[2]]
	switch {
	case err != nil || n < 1:
		o.add(k, ErrRange, ": %q (want a count of 1 or more)", s)
		return nil
	case !unit:
		o.add(k, ErrUnknownValue, ": unit %q in %q (want sec, min, hour or day)", m[2], s)
		return nil
	}
	return &RateLimit{Max: n, Per: per}
}

// binding translates type and address into a bus, a device (or a register
// of one shared with other capabilities) and our read binding.
func (t *pmTranslator) binding(b obj, name, kind string, typ *ValueType, unit, desc *string, enumVals []string, c obj) yaml.MapSlice {
	var bt string
	if !enum(b, "type", &bt, pmBindingTypes, true) {
		return nil
	}
	if why, ok := pmUnsupportedBinding[bt]; ok {
		b.add("type", ErrUnsupported, ": %s (%s)", bt, why)
		return nil
	}
	t.bindingPath = b.at("address")
	addr := b.requiredStr("address", "the binding's address, such as \"0x48:reg=0x00\"")
	if addr == "" {
		return nil
	}
	parts, ok := splitAddress(b, addr)
	if !ok {
		return nil
	}
	extensions := map[string][]string{
		"i2c":    {"bus_device", "register_type", "byte_order", "scale", "offset"},
		"gpio":   {"active_low", "pull"},
		"modbus": {"bus_address", "register_type", "byte_order", "scale", "offset"},
		"pwm":    {"bus_device"},
		"adc":    {"bus_device", "chip", "full_scale"},
		"spi":    {"bus_device", "vref"},
		"mqtt":   {"bus_address", "command_topic", "availability"},
	}[bt]
	for _, k := range pmBindingKeys[2:] {
		if b.has(k) && !slices.Contains(extensions, k) {
			b.add(k, ErrNotAllowed, "on a %s binding (want %s)", bt, oneOf(extensions))
		}
	}
	switch bt {
	case "i2c":
		return t.i2c(b, parts, name, kind, *typ)
	case "gpio":
		return t.gpio(b, parts, name, kind, *typ)
	case "modbus":
		return t.modbus(b, parts, name, kind, typ, unit, desc, enumVals, c)
	case "pwm":
		return t.pwm(b, parts, name, *typ, *unit)
	case "mqtt":
		return t.mqtt(b, parts, name, kind, *typ)
	case "adc", "spi":
		return t.adc(b, bt, parts, name, kind, *typ, *unit)
	}
	return nil
}

// adc: "0x48:ch=0" is input a0 (against GND) of an ADS1115 at 0x48
// (0x48..0x4b; without the address, 0x48), read in volts. PhysMCP does not
// say the chip, the bus or the gain: chip (ads1115, the default, or
// ads1015), bus_device (default the first I2C bus) and full_scale (default
// 4.096 V) say them.
//
// spi: "ch=0" is input ch0 (against GND) of an MCP3008 on /dev/spidev0.0,
// read in volts; "cs=1:ch=0" is the chip on chip-select 1
// (/dev/spidev0.1). bus_device (a spidev path, overriding cs=) and vref
// (default 3.3 V) say what PhysMCP does not. Both are read-only.
func (t *pmTranslator) adc(b obj, bt string, parts map[string]string, name, kind string, typ ValueType, unit string) yaml.MapSlice {
	addr := b.str("address")
	allowed := []string{"", "ch"}
	example := "\"0x48:ch=0\""
	if bt == "spi" {
		allowed, example = []string{"cs", "ch"}, "\"ch=0\""
	}
	if !allowParts(b, parts, addr, allowed...) {
		return nil
	}
	if !needParts(b, parts, addr, example, "ch") {
		return nil
	}
	maxCh := uint64(3)
	if bt == "spi" {
		maxCh = 7
	}
	ch, ok := parseUint(b, parts, "ch", maxCh)
	if !ok {
		return nil
	}
	if kind == "do" {
		t.d.add(parent(b.path)+".kind", ErrNotAllowed, "on an %s binding: do (an ADC input is read-only)", bt)
		return nil
	}
	if typ == "" {
		return nil
	}
	if typ != TypeNumber || unit != "V" {
		t.d.add(parent(b.path)+".unit", ErrNotAllowed, "on an %s binding: data_type %s, unit %q (want float in volt: scaled channels, mA or percent, are declared in our format)", bt, typ, unit)
		return nil
	}
	if t.capTimeout > 0 {
		t.d.add(parent(b.path)+".timeout_ms", ErrUnsupported, "on an %s binding (a conversion's timeout is its bus's)", bt)
	}
	busDev := b.str("bus_device")
	if bt == "spi" {
		cs := uint64(0)
		if _, ok := parts["cs"]; ok {
			if cs, ok = parseUint(b, parts, "cs", 1); !ok {
				return nil
			}
		}
		if busDev == "" {
			busDev = fmt.Sprintf("/dev/spidev0.%d", cs)
		}
		busName := t.bus("spi:"+busDev, yaml.MapSlice{{Key: "name", Value: "spi_" + snake(strings.TrimPrefix(busDev, "/dev/"))}, {Key: "kind", Value: "spi"}, {Key: "device", Value: busDev}})
		devName := busName + "_mcp3008"
		f := yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: "mcp3008"}}
		if v, ok := b.numOK("vref"); ok {
			f = append(f, yaml.MapItem{Key: "vref", Value: v})
		}
		t.device(devName, f)
		return yaml.MapSlice{{Key: "device", Value: devName}, {Key: "channel", Value: fmt.Sprintf("ch%d", ch)}}
	}
	a := uint64(0x48)
	if _, ok := parts[""]; ok {
		if a, ok = parseUint(b, parts, "", 0x7f); !ok {
			return nil
		}
		if a < 0x48 || a > 0x4b {
			b.add("address", ErrRange, ": 0x%02x in %q (an ADS1x15 answers at 0x48..0x4b)", a, addr)
			return nil
		}
	}
	chip := strOr(b.str("chip"), "ads1115")
	if chip != "ads1115" && chip != "ads1015" {
		b.add("chip", ErrUnknownValue, ": %q (want ads1115 or ads1015)", chip)
		return nil
	}
	busName := "i2c"
	item := yaml.MapSlice{{Key: "name", Value: busName}, {Key: "kind", Value: "i2c"}}
	if busDev != "" {
		busName = "i2c_" + snake(busDev)
		item = yaml.MapSlice{{Key: "name", Value: busName}, {Key: "kind", Value: "i2c"}, {Key: "device", Value: busDev}}
	}
	busName = t.bus("i2c:"+busDev, item)
	devName := fmt.Sprintf("%s_0x%02x", busName, a)
	dv := t.device(devName, yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: chip}, {Key: "address", Value: a}})
	in := yaml.MapSlice{{Key: "name", Value: name}, {Key: "input", Value: fmt.Sprintf("a%d", ch)}}
	if v, ok := b.numOK("full_scale"); ok {
		in = append(in, yaml.MapItem{Key: "full_scale", Value: v})
	}
	dv.inputs = append(dv.inputs, in)
	return yaml.MapSlice{{Key: "device", Value: devName}, {Key: "channel", Value: name}}
}

// mqtt: "garden/valve1" is the state topic of a Lite device adopted over
// MQTT (the whole payload is the value); "garden/valve1:path=state.on"
// picks a dot-separated JSON path from it. A do publishes its value on
// the command topic, <topic>/set unless command_topic says another, and
// reads the state topic back. PhysMCP does not say the broker: bus_address
// (default mqtt://127.0.0.1:1883) does, and availability (no default)
// names the topic where the device's Last Will says offline. Capabilities
// on one state topic share one mqtt device (no preset).
func (t *pmTranslator) mqtt(b obj, parts map[string]string, name, kind string, typ ValueType) yaml.MapSlice {
	addr := b.str("address")
	if !allowParts(b, parts, addr, "", "path") {
		return nil
	}
	topic := parts[""]
	if topic == "" || strings.ContainsAny(topic, "+#") {
		b.add("address", ErrType, ": %q (want a state topic without wildcards, such as \"garden/valve1\" or \"garden/valve1:path=state\")", addr)
		return nil
	}
	if typ == "" {
		return nil
	}
	if typ != TypeNumber && typ != TypeInteger && typ != TypeBoolean {
		t.d.add(parent(b.path)+".data_type", ErrUnsupported, "on an mqtt binding: %s (want float, int or bool)", typ)
		return nil
	}
	if kind == "read" && b.has("command_topic") {
		b.add("command_topic", ErrNotAllowed, "on a read capability (only a do publishes commands)")
	}
	if t.capTimeout > 0 {
		t.d.add(parent(b.path)+".timeout_ms", ErrUnsupported, "on an mqtt binding (a do_* waits for its state topic within settle_ms)")
	}
	broker := strOr(b.str("bus_address"), "mqtt://127.0.0.1:1883")
	busName := "mqtt"
	if b.has("bus_address") {
		busName = "mqtt_" + snake(broker)
	}
	busName = t.bus("mqtt:"+broker, yaml.MapSlice{{Key: "name", Value: busName}, {Key: "kind", Value: "mqtt"}, {Key: "mqtt", Value: yaml.MapSlice{{Key: "broker", Value: broker}}}})
	devName := busName + "_" + snake(topic)
	dv := t.device(devName, yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: "mqtt"}})
	if av := b.str("availability"); av != "" {
		dv.mqttAvail = av
	}
	ch := yaml.MapSlice{{Key: "name", Value: name}, {Key: "state", Value: topic}}
	if p := parts["path"]; p != "" {
		ch = append(ch, yaml.MapItem{Key: "path", Value: p})
	}
	if kind == "do" {
		ch = append(ch, yaml.MapItem{Key: "command", Value: strOr(b.str("command_topic"), topic+"/set")})
	}
	dv.inputs = append(dv.inputs, ch)
	return yaml.MapSlice{{Key: "device", Value: devName}, {Key: "channel", Value: name}}
}

// pmPWMPins maps a Raspberry Pi's PWM-capable BCM pins to the channel of
// pwmchip0 they carry (dtoverlay=pwm-2chan: PWM0 on GPIO12 or GPIO18, PWM1
// on GPIO13 or GPIO19).
var pmPWMPins = map[uint64]int{12: 0, 18: 0, 13: 1, 19: 1}

// DefaultPhysMCPPWMFrequency is the frequency of a PhysMCP pwm binding
// whose address leaves out freq=.
const DefaultPhysMCPPWMFrequency = 1000

// pwm: "pin=18:freq=25000" is the hardware PWM channel on BCM pin 18 (a
// Pi's pin 12 or 18 is pwmchip0 channel 0, 13 or 19 channel 1; any other
// pin is refused: it has no hardware PWM), at freq Hz (default 1000). The
// capability is the duty cycle in percent, read back from the chip; a do
// sets it. PhysMCP does not say the chip: bus_device (default
// /sys/class/pwm/pwmchip0) does.
func (t *pmTranslator) pwm(b obj, parts map[string]string, name string, typ ValueType, unit string) yaml.MapSlice {
	addr := b.str("address")
	if !allowParts(b, parts, addr, "pin", "freq") {
		return nil
	}
	if !needParts(b, parts, addr, `"pin=18:freq=25000"`, "pin") {
		return nil
	}
	pin, ok := parseUint(b, parts, "pin", 63)
	if !ok {
		return nil
	}
	ch, ok := pmPWMPins[pin]
	if !ok {
		b.add("address", ErrUnsupported, ": pin=%d in %q (a Raspberry Pi has hardware PWM on GPIO12 and GPIO18, pwmchip0 channel 0, and GPIO13 and GPIO19, channel 1)", pin, addr)
		return nil
	}
	freq := uint64(DefaultPhysMCPPWMFrequency)
	if _, ok := parts["freq"]; ok {
		if freq, ok = parseUint(b, parts, "freq", 100_000_000); !ok {
			return nil
		}
		if freq == 0 {
			b.add("address", ErrRange, ": freq=0 in %q (want 1 Hz or more)", addr)
			return nil
		}
	}
	if typ == "" {
		return nil
	}
	if typ != TypeNumber {
		t.d.add(parent(b.path)+".data_type", ErrNotAllowed, "on a pwm binding: %s (want float, the duty cycle)", typ)
		return nil
	}
	if unit != "%" {
		t.d.add(parent(b.path)+".unit", ErrNotAllowed, "on a pwm binding: %q (want percent, the duty cycle)", unit)
		return nil
	}
	busDev := b.str("bus_device")
	busName := "pwm"
	item := yaml.MapSlice{{Key: "name", Value: busName}, {Key: "kind", Value: "pwm"}}
	if busDev != "" {
		busName = "pwm_" + snake(busDev)
		item = yaml.MapSlice{{Key: "name", Value: busName}, {Key: "kind", Value: "pwm"}, {Key: "device", Value: busDev}}
	}
	busName = t.bus("pwm:"+busDev, item)
	devName := fmt.Sprintf("%s_ch%d", busName, ch)
	t.device(devName, yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: "pwm"}, {Key: "channel", Value: ch}, {Key: "frequency", Value: freq}})
	if t.capTimeout > 0 {
		t.d.add(parent(b.path)+".timeout_ms", ErrUnsupported, "on a pwm binding (writing the kernel's pwm files does not wait on a device)")
	}
	return yaml.MapSlice{{Key: "device", Value: devName}, {Key: "channel", Value: "duty"}}
}

// splitAddress splits "0x48:reg=0x00" into {"": "0x48", "reg": "0x00"}.
func splitAddress(b obj, addr string) (map[string]string, bool) {
	out := map[string]string{}
	for i, part := range strings.Split(addr, ":") {
		k, v, eq := strings.Cut(part, "=")
		if !eq {
			if i != 0 {
				b.add("address", ErrType, ": %q: part %q is not key=value", addr, part)
				return nil, false
			}
			k, v = "", part
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, dup := out[k]; dup {
			b.add("address", ErrDuplicate, "%q in %q", k, addr)
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

func allowParts(b obj, parts map[string]string, addr string, allowed ...string) bool {
	for k := range parts {
		if !slices.Contains(allowed, k) {
			what, want := k, slices.Clone(allowed)
			if k == "" {
				what = "a bare value"
			}
			if want[0] == "" {
				want[0] = "the address"
			}
			b.add("address", ErrUnsupported, ": %s in %q (want %s)", what, addr, strings.Join(want, ", "))
			return false
		}
	}
	return true
}

// needParts reports the first of keys missing from the address, with an
// example of a whole address, and says whether all are there.
func needParts(b obj, parts map[string]string, addr, example string, keys ...string) bool {
	for _, k := range keys {
		if _, ok := parts[k]; !ok {
			b.add("address", ErrMissing, "%s= in %q (want such as %s)", k, addr, example)
			return false
		}
	}
	return true
}

func parseUint(b obj, parts map[string]string, k string, max uint64) (uint64, bool) {
	s := parts[k]
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil || v > max {
		what := k
		if k == "" {
			what = "the address"
		}
		b.add("address", ErrRange, ": %s %q (want an integer 0..%d, decimal or 0x hex)", what, s, max)
		return 0, false
	}
	return v, true
}

func (t *pmTranslator) bus(key string, item yaml.MapSlice) string {
	if i, ok := t.busIndex[key]; ok {
		return t.buses[i].name
	}
	name := item[0].Value.(string)
	t.made["buses"] = append(t.made["buses"], t.bindingPath)
	t.busIndex[key] = len(t.buses)
	t.buses = append(t.buses, pmBus{name, item})
	return name
}

func (t *pmTranslator) device(name string, fields yaml.MapSlice) *pmDevice {
	if i, ok := t.devIndex[name]; ok {
		return t.devices[i]
	}
	dv := &pmDevice{name: name, fields: append(yaml.MapSlice{{Key: "name", Value: name}}, fields...)}
	t.made["devices"] = append(t.made["devices"], t.bindingPath)
	t.devIndex[name] = len(t.devices)
	t.devices = append(t.devices, dv)
	return dv
}

var firstAt = regexp.MustCompile(` \(first at line \d+\)`)

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

func snake(s string) string {
	return strings.Trim(nonWord.ReplaceAllString(strings.ToLower(s), "_"), "_")
}

// i2c: "0x48:reg=0x00" is register 0x00 of a register-map device at 0x48.
// PhysMCP does not say the bus or the register's encoding: bus_device
// (default the first bus), register_type (default int16), byte_order
// (default big), scale (default 1) and offset (default 0) say them.
func (t *pmTranslator) i2c(b obj, parts map[string]string, name, kind string, typ ValueType) yaml.MapSlice {
	addr := b.str("address")
	if !allowParts(b, parts, addr, "", "reg") {
		return nil
	}
	if !needParts(b, parts, addr, `"0x48:reg=0x00"`, "reg") {
		return nil
	}
	a, ok1 := parseUint(b, parts, "", 0x7f)
	reg, ok2 := parseUint(b, parts, "reg", 0xff)
	if !ok1 || !ok2 {
		return nil
	}
	if typ == "" {
		return nil // the data_type is reported
	}
	if typ != TypeNumber && typ != TypeInteger {
		b.add("type", ErrUnsupported, ": an i2c register carries a float or an int, not %s", typ)
		return nil
	}
	busDev := b.str("bus_device")
	busName := "i2c"
	if busDev != "" {
		busName = "i2c_" + snake(busDev)
	}
	item := yaml.MapSlice{{Key: "name", Value: busName}, {Key: "kind", Value: "i2c"}}
	if busDev != "" {
		item = append(item, yaml.MapItem{Key: "device", Value: busDev})
	}
	busName = t.bus("i2c:"+busDev, item)
	devName := fmt.Sprintf("%s_0x%02x", busName, a)
	dv := t.device(devName, yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: "registers"}, {Key: "address", Value: a}})
	r := yaml.MapSlice{{Key: "name", Value: name}, {Key: "address", Value: reg}, {Key: "type", Value: strOr(b.str("register_type"), "int16")}}
	for _, k := range []string{"byte_order"} {
		if s := b.str(k); s != "" {
			r = append(r, yaml.MapItem{Key: k, Value: s})
		}
	}
	for _, k := range []string{"scale", "offset"} {
		if v, ok := b.numOK(k); ok {
			r = append(r, yaml.MapItem{Key: k, Value: v})
		}
	}
	if kind == "do" {
		r = append(r, yaml.MapItem{Key: "writable", Value: true})
	}
	dv.regs = append(dv.regs, r)
	if t.capTimeout > 0 {
		t.d.add(parent(b.path)+".timeout_ms", ErrUnsupported, "on an i2c binding (an I2C transaction's timeout is its bus's: set timeout on the bus in our format)")
	}
	return yaml.MapSlice{{Key: "device", Value: devName}, {Key: "channel", Value: name}}
}

func strOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// gpio: "pin=14:mode=digital" is BCM pin GPIO14, an input for a read and an
// output for a do. Only digital mode exists here.
func (t *pmTranslator) gpio(b obj, parts map[string]string, name, kind string, typ ValueType) yaml.MapSlice {
	addr := b.str("address")
	if !allowParts(b, parts, addr, "pin", "mode") {
		return nil
	}
	if m, ok := parts["mode"]; ok && m != "digital" {
		b.add("address", ErrUnsupported, ": mode=%s in %q (a GPIO here is digital; an analog value needs an ADC device model)", m, addr)
		return nil
	}
	if _, ok := parts["pin"]; !ok {
		b.add("address", ErrMissing, "pin= in %q (want such as \"pin=14:mode=digital\")", addr)
		return nil
	}
	pin, ok := parseUint(b, parts, "pin", 63)
	if !ok {
		return nil
	}
	if typ == "" {
		return nil
	}
	if typ != TypeBoolean {
		t.d.add(parent(b.path)+".data_type", ErrNotAllowed, "on a gpio binding: %s (want bool)", typ)
		return nil
	}
	if kind == "read" && b.has("active_low") {
		b.add("active_low", ErrNotAllowed, "on an input (only outputs are active low here)")
	}
	if kind == "do" && b.has("pull") {
		b.add("pull", ErrNotAllowed, "on an output (only inputs have a pull resistor)")
	}
	busName := t.bus("gpio", yaml.MapSlice{{Key: "name", Value: "gpio"}, {Key: "kind", Value: "gpio"}})
	model := map[string]string{"read": "gpio_in", "do": "gpio_out"}[kind]
	devName := fmt.Sprintf("gpio%d_%s", pin, map[string]string{"read": "in", "do": "out"}[kind])
	f := yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: model}, {Key: "pin", Value: fmt.Sprintf("GPIO%d", pin)}}
	if b.has("active_low") {
		f = append(f, yaml.MapItem{Key: "active_low", Value: b.boolean("active_low")})
	}
	if s := b.str("pull"); s != "" {
		f = append(f, yaml.MapItem{Key: "pull", Value: s})
	}
	t.device(devName, f)
	if t.capTimeout > 0 {
		t.d.add(parent(b.path)+".timeout_ms", ErrUnsupported, "on a gpio binding (setting a pin does not wait on a device)")
	}
	return yaml.MapSlice{{Key: "device", Value: devName}}
}

// modbus: "slave=1:reg=40001:type=holding". The register number is the
// Modicon one (40001 is holding 0, 30001 input 0, 10001 discrete 0, and
// without type= 1 is coil 0) or, with type= and a number below 10000 (or
// one whose Modicon table is another), a 0-based address. PhysMCP does not say where the
// slave is nor how a value is encoded: bus_address (default
// 127.0.0.1:502, Modbus TCP), register_type (default int16 for float and
// int, bool on coils and discrete inputs), byte_order (default ABCD),
// scale (default 1) and offset (default 0) say them. An enum do is the
// index of its enum_values in the register (0 is the first).
func (t *pmTranslator) modbus(b obj, parts map[string]string, name, kind string, typ *ValueType, unit, desc *string, enumVals []string, c obj) yaml.MapSlice {
	addr := b.str("address")
	if !allowParts(b, parts, addr, "slave", "reg", "type") {
		return nil
	}
	if !needParts(b, parts, addr, `"slave=1:reg=40001:type=holding"`, "slave", "reg") {
		return nil
	}
	slave, ok1 := parseUint(b, parts, "slave", 247)
	reg, ok2 := parseUint(b, parts, "reg", 465536)
	if !ok1 || !ok2 {
		return nil
	}
	table := parts["type"]
	modicon := map[uint64]string{4: "holding", 3: "input", 1: "discrete", 0: "coil"}
	if reg >= 1 && reg <= 99999 && reg%10000 != 0 {
		if tb, ok := modicon[reg/10000]; ok && (table == "" || table == tb) && (reg > 9999 || table == "") {
			table, reg = tb, reg%10000-1
		}
	}
	if !slices.Contains(tables, table) {
		b.add("address", ErrUnknownValue, ": type=%s in %q (want %s)", table, addr, oneOf(tables))
		return nil
	}
	if reg > 65535 {
		b.add("address", ErrRange, ": reg %d in %q (want 0..65535, or a Modicon number such as 40001)", reg, addr)
		return nil
	}
	if kind == "do" && (table == "input" || table == "discrete") {
		b.add("address", ErrNotAllowed, ": type=%s for a do (a %s register is read-only)", table, table)
		return nil
	}
	rtype := b.str("register_type")
	switch {
	case *typ == TypeBoolean && rtype == "":
		rtype = "bool"
	case rtype == "":
		rtype = "int16"
	}
	if *typ == TypeEnum {
		if len(enumVals) == 0 {
			c.add("enum_values", ErrMissing, "enum_values (the values of the enum, in register order)")
			return nil
		}
		*typ = TypeInteger
		*unit = "index"
		var vs []string
		for i, v := range enumVals {
			vs = append(vs, fmt.Sprintf("%d=%s", i, v))
		}
		*desc += " (register value: " + strings.Join(vs, ", ") + ")"
	}
	busAddr := strOr(b.str("bus_address"), "127.0.0.1:502")
	busName := "modbus"
	if b.has("bus_address") {
		busName = "modbus_" + snake(busAddr)
	}
	busName = t.bus("modbus:"+busAddr, yaml.MapSlice{{Key: "name", Value: busName}, {Key: "kind", Value: "modbus_tcp"}, {Key: "address", Value: busAddr}})
	devName := fmt.Sprintf("%s_slave_%d", busName, slave)
	dv := t.device(devName, yaml.MapSlice{{Key: "bus", Value: busName}, {Key: "model", Value: "modbus"}, {Key: "unit_id", Value: slave}})
	r := yaml.MapSlice{{Key: "name", Value: name}, {Key: "table", Value: table}, {Key: "address", Value: reg}, {Key: "type", Value: rtype}}
	if s := b.str("byte_order"); s != "" {
		r = append(r, yaml.MapItem{Key: "byte_order", Value: s})
	}
	for _, k := range []string{"scale", "offset"} {
		if v, ok := b.numOK(k); ok {
			r = append(r, yaml.MapItem{Key: k, Value: v})
		}
	}
	if kind == "do" {
		r = append(r, yaml.MapItem{Key: "writable", Value: true})
	}
	dv.regs = append(dv.regs, r)
	t.timeout(dv)
	return yaml.MapSlice{{Key: "device", Value: devName}, {Key: "channel", Value: name}}
}

// timeout maps timeout_ms to the device's timeout (the longest that any of
// its capabilities asks for).
func (t *pmTranslator) timeout(dv *pmDevice) {
	if t.capTimeout > dv.timeout {
		dv.timeout = t.capTimeout
	}
}
