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
	"sync"
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
func IsPhysMCP(data []byte) bool { return isPhysMCPKeys(topKeys(data)) }

// isPhysMCPKeys is IsPhysMCP on the document's top-level keys.
func isPhysMCPKeys(keys map[string]bool) bool {
	return keys["physmcp_version"] || keys["device"] && keys["capabilities"] && !keys["version"]
}

// IsPhysMCPPolicy reports whether data is a PhysMCP policy file.
func IsPhysMCPPolicy(data []byte) bool { return isPhysMCPPolicyKeys(topKeys(data)) }

// isPhysMCPPolicyKeys is IsPhysMCPPolicy on the file's top-level keys.
func isPhysMCPPolicyKeys(keys map[string]bool) bool {
	return keys["physmcp_policy_version"] || keys["time_windows"] || keys["capabilities"] && !keys["version"] && !keys["device"]
}

func topKeys(data []byte) map[string]bool {
	f, err := parseBytes(data)
	if err != nil {
		return map[string]bool{}
	}
	return fileKeys(f)
}

// fileKeys are the top-level keys of the first document of f.
func fileKeys(f *ast.File) map[string]bool {
	out := map[string]bool{}
	if f == nil || len(f.Docs) == 0 || f.Docs[0] == nil {
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
	manifest, _, info, err := convertPhysMCP("convert", file, data, policyFile, policy, policyName)
	if err != nil || policy == nil {
		return manifest, nil, err
	}
	pdoc, err := translatePhysMCPPolicy(policyFile, policy, info)
	if err != nil {
		return nil, nil, err
	}
	if pol, err = yaml.Marshal(pdoc); err != nil {
		return nil, nil, fmt.Errorf("convert %s: %w", policyFile, err)
	}
	return manifest, pol, nil
}

// parsePhysMCP is Parse for a PhysMCP manifest: it translates, reading the
// policy beside file (for its range guards), and validates the result.
func parsePhysMCP(file string, data []byte) (*Manifest, error) {
	policyFile := filepath.Join(filepath.Dir(file), PhysMCPPolicyName)
	var policy []byte
	if file != "" {
		if pdata, err := os.ReadFile(policyFile); err == nil && IsPhysMCPPolicy(pdata) {
			policy = pdata
		}
	}
	_, m, info, err := convertPhysMCP("load", file, data, policyFile, policy, PhysMCPPolicyName)
	if err != nil {
		return nil, err
	}
	m.File = file
	m.physmcp = info
	return m, nil
}

// convertPhysMCP translates a PhysMCP manifest, its do capabilities
// narrowed by the range guards of its policy (nil for none), and validates
// the translation: our manifest's YAML, what it parses into, and what the
// manifest leaves for the policy. A problem the validation finds is
// reported at the PhysMCP key it comes from (see pmTranslator.relocate);
// verb says what was done in an error of the YAML encoder.
func convertPhysMCP(verb, file string, data []byte, policyFile string, policy []byte, policyName string) ([]byte, *Manifest, *physmcpInfo, error) {
	var guards map[string]rangeGuard
	if policy != nil {
		var err error
		if guards, err = physmcpRangeGuards(policyFile, policy); err != nil {
			return nil, nil, nil, err
		}
	}
	t, doc, err := translatePhysMCP(file, data, guards, policyName)
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s %s: %w", verb, file, err)
	}
	m, err := Parse(file, out)
	if err != nil {
		return nil, nil, nil, t.relocate(err)
	}
	return out, m, t.info, nil
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
		detail := firstAt().ReplaceAllString(strings.TrimPrefix(pe.Err.Error(), sentinel.Error()), "")
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
	o, ok := t.d.document(root, pmTopKeys, "physmcp_version and capabilities")
	if !ok {
		return nil
	}
	requireVersion(o, "physmcp_version")
	doc := yaml.MapSlice{{Key: "version", Value: 1}}
	var zone string
	if dev, ok := o.sub("device", pmDeviceKeys); ok {
		var head yaml.MapSlice
		head, zone = t.deviceKeys(dev)
		doc = append(doc, head...)
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
	if t.d.p.err() != nil {
		return nil
	}
	var buses []yaml.MapSlice
	for _, b := range t.buses {
		buses = append(buses, b.item)
	}
	var devs []yaml.MapSlice
	for _, dv := range t.devices {
		devs = append(devs, dv.item())
	}
	return append(doc,
		yaml.MapItem{Key: "buses", Value: buses},
		yaml.MapItem{Key: "devices", Value: devs},
		yaml.MapItem{Key: "capabilities", Value: caps})
}

// requireVersion checks a PhysMCP file's version key k: "0.1", required.
func requireVersion(o obj, k string) {
	if v, ok := o.strOK(k); ok && v != "0.1" {
		o.add(k, ErrUnknownValue, "%q (want \"0.1\")", v)
	}
	o.require(k, `"0.1"`)
}

// deviceKeys translates the device: its id is the gateway's name, its
// type, make and location the description; zone is the location's zone,
// the location of every capability.
func (t *pmTranslator) deviceKeys(dev obj) (head yaml.MapSlice, zone string) {
	if id, ok := t.d.name(dev.f["id"], dev.at("id")); ok {
		head = append(head, yaml.MapItem{Key: "gateway", Value: id})
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
		var where []string
		where, zone = t.location(loc)
		desc = append(desc, where...)
	}
	dev.require("location", "location with a zone")
	if c, ok := dev.sub("certification", []string{"physmcp_certified", "cert_id", "cert_expiry"}); ok {
		c.boolean("physmcp_certified")
		c.str("cert_id")
		c.str("cert_expiry")
	}
	if len(desc) > 0 {
		head = append(head, yaml.MapItem{Key: "description", Value: strings.Join(desc, "; ")})
	}
	return head, zone
}

// location is the device's zone and what its area, description and
// coordinates add to the description.
func (t *pmTranslator) location(loc obj) (desc []string, zone string) {
	zone, _ = t.d.name(loc.f["zone"], loc.at("zone"))
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
	return desc, zone
}

// item is the device's entry in our manifest: its fields, then the
// timeout, registers and inputs (or mqtt channels) its capabilities made.
func (dv *pmDevice) item() yaml.MapSlice {
	f := slices.Clone(dv.fields)
	if dv.timeout > 0 {
		f = append(f, yaml.MapItem{Key: "timeout", Value: FormatDuration(dv.timeout)})
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
	return f
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

// pmDataTypes maps PhysMCP's data types to ours (string has none).
var pmDataTypes = map[string]ValueType{"float": TypeNumber, "int": TypeInteger, "bool": TypeBoolean, "enum": TypeEnum}

// pmDoKeys are the keys only a do capability takes.
var pmDoKeys = []string{"rate_limit", "requires_permission", "requires_quorum", "quorum_size", "cooldown_ms", "side_effects", "compensable", "safe_value", "settle_ms"}

// pmCap is a capability as its keys say it, before it becomes ours.
type pmCap struct {
	c                          obj
	name, kind, desc, dt, unit string
	typ                        ValueType
	enumVals                   []string
}

func (t *pmTranslator) capability(c obj, zone string) yaml.MapSlice {
	pc := pmCap{c: c, name: c.name()}
	enum(c, "kind", &pc.kind, []string{"read", "do"}, true)
	pc.desc = c.requiredStr("description", "what the capability is, for people and agents")
	enum(c, "data_type", &pc.dt, []string{"float", "int", "bool", "enum", "string"}, true)
	refuseCapKeys(c, pc.kind, pc.dt)
	tags := c.strs("semantic_tags")
	c.require("semantic_tags", "the words can_do matches, such as [temperature, ambient]")
	c.num("precision")
	c.num("sample_rate_hz")
	t.capTimeout = 0
	if ms, ok := atLeastOne(c, "timeout_ms"); ok {
		t.capTimeout = time.Duration(ms) * time.Millisecond
	}
	pc.typ = pmDataTypes[pc.dt]
	pc.unit = c.str("unit")
	if u, ok := pmUnits[pc.unit]; ok {
		pc.unit = u
	}
	pc.enumVals = c.strs("enum_values")

	b, ok := c.sub("binding", pmBindingKeys)
	c.require("binding", "type and address")
	var read yaml.MapSlice
	if ok && pc.name != "" && pc.kind != "" && pc.dt != "" {
		read = t.binding(b, &pc)
	}
	cp := capItem(c, pc, zone, tags, read)
	rmin, rmax := c.rangeKeys()
	switch pc.kind {
	case "read":
		return readRange(c, cp, pc.typ, rmin, rmax)
	case "do":
		cp = append(cp, yaml.MapItem{Key: "do", Value: t.doItem(c, pc, rmin, rmax)})
		t.rules(c, "do_"+pc.name)
	}
	return cp
}

// refuseCapKeys refuses the values of a capability this gateway cannot
// honour.
func refuseCapKeys(c obj, kind, dt string) {
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
}

// atLeastOne is the integer at k when it is there and 1 or more; below 1
// it is reported.
func atLeastOne(o obj, k string) (int64, bool) {
	v, ok := o.integer(k)
	if ok && v < 1 {
		o.add(k, ErrRange, "%d (want 1 or more)", v)
		return v, false
	}
	return v, ok
}

// capItem is our capability's head: name, description, type, unit, ttl,
// location, tags and read binding.
func capItem(c obj, pc pmCap, zone string, tags []string, read yaml.MapSlice) yaml.MapSlice {
	cp := yaml.MapSlice{{Key: "name", Value: pc.name}, {Key: "description", Value: pc.desc}, {Key: "type", Value: string(pc.typ)}}
	if pc.unit != "" && pc.typ != TypeBoolean && pc.typ != TypeEnum {
		cp = append(cp, yaml.MapItem{Key: "unit", Value: pc.unit})
	}
	if ms, ok := atLeastOne(c, "cache_ttl_ms"); ok {
		cp = append(cp, yaml.MapItem{Key: "ttl", Value: FormatDuration(time.Duration(ms) * time.Millisecond)})
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
	return cp
}

// readRange ends a read capability: its range is the plausible span, and
// no key of a do is allowed.
func readRange(c obj, cp yaml.MapSlice, typ ValueType, rmin, rmax *float64) yaml.MapSlice {
	if rmin != nil && rmax != nil && typ != TypeBoolean {
		cp = append(cp, yaml.MapItem{Key: "health", Value: yaml.MapSlice{{Key: "plausible", Value: yaml.MapSlice{{Key: "min", Value: *rmin}, {Key: "max", Value: *rmax}}}}})
	} else if c.has("range") {
		c.add("range", ErrUnsupported, "(on a read, a range is the plausible span and needs both min and max)")
	}
	for _, k := range pmDoKeys {
		if c.has(k) {
			c.add(k, ErrNotAllowed, "on a read capability (it belongs to kind do)")
		}
	}
	return cp
}

// doItem is a do capability's do: its tool, side effects, settle,
// constraints (the range narrowed by the policy's range guard) and safe
// value.
func (t *pmTranslator) doItem(c obj, pc pmCap, rmin, rmax *float64) yaml.MapSlice {
	do := yaml.MapSlice{{Key: "tool", Value: "do_" + pc.name}, {Key: "description", Value: pc.desc}}
	if se := c.strs("side_effects"); len(se) > 0 {
		do = append(do, yaml.MapItem{Key: "side_effects", Value: se})
	} else {
		c.add("side_effects", ErrMissing, "side_effects (optional in PhysMCP, required here: an agent is told what a do_* changes before it acts, such as [water flows to field_2])")
	}
	if c.has("compensable") {
		do = append(do, yaml.MapItem{Key: "compensable", Value: c.boolean("compensable")})
	}
	if ms, ok := c.integer("settle_ms"); ok && ms > 0 {
		do = append(do, yaml.MapItem{Key: "settle", Value: FormatDuration(time.Duration(ms) * time.Millisecond)})
	}
	if g, ok := t.guards["do_"+pc.name]; ok {
		rmin, rmax = narrow(rmin, g.min, true), narrow(rmax, g.max, false)
	}
	if cons := constraints(c, pc, rmin, rmax); len(cons) > 0 {
		do = append(do, yaml.MapItem{Key: "constraints", Value: cons})
	}
	if c.has("safe_value") {
		do = append(do, yaml.MapItem{Key: "safe_value", Value: c.scalar("safe_value")})
	}
	return do
}

// constraints are a do's bounds, its step (a float's precision, an
// enum's index) and its enum values.
func constraints(c obj, pc pmCap, rmin, rmax *float64) yaml.MapSlice {
	var cons yaml.MapSlice
	if rmin != nil {
		cons = append(cons, yaml.MapItem{Key: "min", Value: *rmin})
	}
	if rmax != nil {
		cons = append(cons, yaml.MapItem{Key: "max", Value: *rmax})
	}
	if pc.typ == TypeNumber {
		if v, ok := c.numOK("precision"); ok && v > 0 {
			cons = append(cons, yaml.MapItem{Key: "step", Value: v})
		}
	}
	if pc.typ == TypeEnum && len(pc.enumVals) > 0 {
		cons = append(cons, yaml.MapItem{Key: "enum", Value: pc.enumVals})
	}
	return cons
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
	if v, ok := atLeastOne(c, "quorum_size"); ok {
		size = v
	}
	if c.boolean("requires_quorum") {
		r.Quorum = int(size)
	} else if c.has("quorum_size") {
		c.add("quorum_size", ErrNotAllowed, "without requires_quorum: true")
	}
	if ms, ok := atLeastOne(c, "cooldown_ms"); ok {
		r.Cooldown = time.Duration(ms) * time.Millisecond
	}
	t.info.rules[tool] = r
}

var rateRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*([0-9]+)\s*/\s*([a-z]+)\s*$`) })

var rateUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "second": time.Second, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hour": time.Hour, "d": 24 * time.Hour, "day": 24 * time.Hour,
}

// parseRate decodes PhysMCP's "6/hour".
func parseRate(o obj, k, s string) *RateLimit {
	m := rateRe().FindStringSubmatch(s)
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

var firstAt = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` \(first at line \d+\)`) })
