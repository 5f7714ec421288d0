package manifests

import (
	_ "embed" // doc.go, the source of the reference's descriptions
	"regexp"
	"slices"
	"strings"
	"sync"
)

// docSource is this package's documentation (doc.go): its tables give each
// key's type, default and constraint, which [Reference] attaches to the
// keys the decoder accepts.
//
//go:embed doc.go
var docSource string

// RefNode is one mapping of a file format, as its decoder reads it.
type RefNode struct {
	// Path is where the mapping sits, in the words of error messages:
	// "" for the top level, "buses[]" for each bus, "capabilities[].do"
	// for an action, "actions.*" for the value of every key of actions.
	Path string
	// Keys are the keys the decoder accepts, in documentation order; any
	// other key is an error.
	Keys []string
	// Scalar: a plain value (a duration, a name) may stand for the mapping
	// (cooldown: 5m, roles: [operator]).
	Scalar bool
	// Rows are the rows of the mapping's table in doc.go, by key: its
	// type, default and constraint, as written there. Nil where doc.go has
	// no table for the mapping.
	Rows map[string][]string
}

// RefFormat is one of the YAML file formats the program reads.
type RefFormat struct {
	Name  string // "manifest", "policy", "fleet", "scenario", "homeassistant"
	Nodes []RefNode
	// Enums are the closed sets of values, by "path.key" (the path as in
	// RefNode, "." and the key): {"buses[].kind": [i2c, gpio, ...]}.
	Enums map[string][]string
}

// RefModel is one device model.
type RefModel struct {
	Name string
	// Buses are the bus kinds that carry it.
	Buses []string
	// SimValues: the simulator takes its starting values from sim.values.
	SimValues bool
	// ZoneSensor: it may be a sim zone's sensor (ZoneSensorModels).
	ZoneSensor bool
	// Channels is its row of doc.go's model table: the channels a
	// capability reads, their value types and whether they are writable.
	Channels []string
}

// Ref is what the decoders of this package accept, for the generated
// manifest reference and the JSON Schemas of the formats.
type Ref struct {
	BusKinds []string
	Models   []RefModel
	Formats  []RefFormat
}

// Reference returns the keys, closed value sets, bus kinds and models the
// decoders accept, read from the tables the decoders use, so that it
// follows the code; doc.go's tables give the descriptions.
func Reference() Ref {
	rows := docTables(docSource)
	r := Ref{BusKinds: slices.Clone(busKinds)}
	zone := words(ZoneSensorModels...)
	for _, m := range models {
		rm := RefModel{Name: m, SimValues: hasSimValues(Model(m)), ZoneSensor: slices.Contains(zone, m), Channels: rows["models"][m]}
		for _, k := range busKinds {
			if carries(BusKind(k), Model(m)) {
				rm.Buses = append(rm.Buses, k)
			}
		}
		r.Models = append(r.Models, rm)
	}
	man := refFormat("manifest", rows, []RefNode{
		{Path: "", Keys: manifestKeys},
		{Path: "buses[]", Keys: busKeys},
		{Path: "buses[].mqtt", Keys: mqttBusKeys},
		{Path: "devices[]", Keys: deviceKeys},
		{Path: "devices[].registers[]", Keys: union(registerKeys, modbusRegKeys)},
		{Path: "devices[].sim", Keys: deviceSimKeys},
		{Path: "devices[].inputs[]", Keys: adcInputKeys},
		{Path: "devices[].pins[]", Keys: expanderPinKeys},
		{Path: "devices[].mqtt", Keys: mqttDeviceKeys},
		{Path: "devices[].mqtt.channels[]", Keys: mqttChannelKeys},
		{Path: "capabilities[]", Keys: capabilityKeys},
		{Path: "capabilities[].read", Keys: bindingKeys},
		{Path: "capabilities[].do", Keys: actionKeys},
		{Path: "capabilities[].do.constraints", Keys: constraintsKeys},
		{Path: "capabilities[].health", Keys: healthKeys},
		{Path: "capabilities[].health.plausible", Keys: rangeKeys},
		{Path: "capabilities[].observe", Keys: observeKeys},
		{Path: "capabilities[].history", Keys: historyKeys},
		{Path: "groups[]", Keys: groupKeys},
		{Path: "jobs[]", Keys: jobKeys},
		{Path: "jobs[].hold", Keys: jobHoldKeys},
		{Path: "jobs[].ramp", Keys: jobRampKeys},
		{Path: "jobs[].steps[]", Keys: jobStepKeys},
		{Path: "sim", Keys: simKeys},
		{Path: "sim.zones[]", Keys: zoneKeys},
	})
	man.Enums = map[string][]string{
		"buses[].kind": busKinds, "buses[].parity": parities, "buses[].rs485": rs485Modes,
		"devices[].model": models, "devices[].pull": pulls,
		"devices[].registers[].table": tables, "devices[].registers[].type": union(regTypes, dataTypes),
		"devices[].registers[].byte_order": union(byteOrders, wordOrders),
		"devices[].sim.profile":            profiles, "devices[].inputs[].as": adcScales,
		"devices[].mqtt.preset": mqttPresets,
		"capabilities[].type":   valueTypes, "capabilities[].health.on_device_error": deviceErrs,
	}
	pol := refFormat("policy", rows, []RefNode{
		{Path: "", Keys: policyKeys},
		{Path: "roles[]", Keys: roleKeys, Scalar: true},
		{Path: "actions.*", Keys: actionPolKeys},
		{Path: "actions.*.cooldown", Keys: cooldownKeys, Scalar: true},
		{Path: "actions.*.cooldown.when", Keys: whenKeys},
		{Path: "actions.*.rate_limit", Keys: rateLimitKeys},
		{Path: "actions.*.windows", Keys: windowsKeys},
		{Path: "actions.*.windows.when", Keys: whenKeys},
		{Path: "actions.*.windows.allow[]", Keys: windowKeys},
		{Path: "actions.*.windows.deny[]", Keys: windowKeys},
		{Path: "actions.*.approval", Keys: approvalKeys},
		{Path: "actions.*.interlocks[]", Keys: interlockKeys},
		{Path: "actions.*.interlocks[].when", Keys: whenKeys},
		{Path: "actions.*.quorum", Keys: quorumKeys},
		{Path: "actions.*.revert", Keys: revertKeys},
		{Path: "identity", Keys: identityKeys},
		{Path: "identity.providers[]", Keys: providerKeys},
		{Path: "emergency", Keys: emergencyKeys},
	})
	fl := refFormat("fleet", rows, []RefNode{
		{Path: "", Keys: fleetKeys},
		{Path: "listen", Keys: listenKeys},
		{Path: "cluster", Keys: clusterKeys},
		{Path: "leaf_ping", Keys: pingKeys},
		{Path: "routes.*", Keys: routeKeys},
	})
	fl.Enums = map[string][]string{"role": fleetRoles}
	sc := refFormat("scenario", rows, []RefNode{
		{Path: "", Keys: scenarioKeys},
		{Path: "faults[]", Keys: faultKeys},
	})
	sc.Enums = map[string][]string{"faults[].fault": words(FaultKinds()...)}
	ha := refFormat("homeassistant", rows, []RefNode{
		{Path: "", Keys: haKeys},
		{Path: "mqtt", Keys: mqttBusKeys},
		{Path: "caller", Keys: haCallerKeys},
	})
	r.Formats = []RefFormat{man, pol, fl, sc, ha}
	return r
}

// refFormat names the nodes of a format and gives each its doc.go rows
// (the manifest's; the other formats are documented on their pages).
func refFormat(name string, rows map[string]map[string][]string, nodes []RefNode) RefFormat {
	for i := range nodes {
		nodes[i].Keys = slices.Clone(nodes[i].Keys)
		if name == "manifest" {
			nodes[i].Rows = rows[nodes[i].Path]
		}
	}
	return RefFormat{Name: name, Nodes: nodes}
}

// union is a then the words of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, w := range b {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// docPath is the first mapping path a paragraph of doc.go names in
// parentheses: "(buses[])", "(capabilities[].do.constraints)", "(sim)".
var docPath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\(([a-z_]+(?:\[\])?(?:\.[a-z_]+(?:\[\])?)*)\)`) })

// docTables reads the tables of doc.go: for each mapping path (or
// "models", the model table), the rows by key, cut into the columns the
// header names. A table belongs to the paragraph before it; a row whose
// first column is empty continues the row above.
func docTables(src string) map[string]map[string][]string {
	out := map[string]map[string][]string{}
	var para []string
	var t docTable
	inTable := false
	for _, line := range strings.Split(src, "\n") {
		text, ok := strings.CutPrefix(line, "//")
		if !ok {
			continue
		}
		if row, isRow := strings.CutPrefix(text, "\t"); isRow {
			if !inTable {
				inTable = true
				t = newDocTable(strings.Join(para, " "), row)
				continue // the header row
			}
			if t.path != "-" {
				t.add(out, row)
			}
			continue
		}
		text = strings.TrimSpace(text)
		if text == "" {
			if !inTable && len(para) > 0 {
				para = append(para, "\n")
			}
			continue
		}
		if inTable || (len(para) > 0 && para[len(para)-1] == "\n") {
			para = nil
		}
		inTable = false
		para = append(para, text)
	}
	return out
}

// docTable is a table of doc.go being read: the path it documents, the
// label of its rows, where its columns start, and the key of its last row.
type docTable struct {
	path, label string
	cols        []int
	last        []string
}

// newDocTable starts the table whose header is header, after paragraph p:
// its path ("-" for a table that documents no mapping, such as an
// example), and its rows' label where two tables document one path (a
// register of a registers device and one of a modbus device).
func newDocTable(p, header string) docTable {
	t := docTable{path: "-"}
	for i := 1; i < len(header); i++ {
		if header[i] != ' ' && header[i-1] == ' ' {
			t.cols = append(t.cols, i)
		}
	}
	switch {
	case strings.HasPrefix(p, "Top level"):
		t.path = ""
	case strings.Contains(p, "models and their channels"):
		t.path = "models"
	default:
		if m := docPath().FindStringSubmatch(p); m != nil {
			t.path = m[1]
		}
	}
	for _, model := range []string{"registers", "modbus"} {
		if t.path == "devices[].registers[]" && strings.Contains(p, "register of a "+model+" device") {
			t.label = model + ": "
		}
	}
	return t
}

// add adds one row to out[t.path]: "key  columns...", or "a, b  columns"
// for two keys sharing a row, or a continuation of the last row's last
// column.
func (t *docTable) add(out map[string]map[string][]string, row string) {
	if out[t.path] == nil {
		out[t.path] = map[string][]string{}
	}
	if strings.HasPrefix(row, " ") {
		for _, k := range t.last {
			c := out[t.path][k]
			c[len(c)-1] += " " + strings.Join(strings.Fields(row), " ")
		}
		return
	}
	key, rest := rowKey(row)
	t.last = strings.Split(key, ", ")
	cols := t.columns(row, rest)
	if last := len(cols) - 1; cols[last] != "" {
		cols[last] = t.label + cols[last]
	}
	for _, k := range t.last {
		row := slices.Clone(cols)
		if prev, dup := out[t.path][k]; dup { // the modbus register table after the registers one
			for i := range row {
				row[i] = mergeCell(prev[i], row[i], i == len(row)-1)
			}
		}
		out[t.path][k] = row
	}
}

// mergeCell is the cell of a key two tables document: one of equal cells,
// else both ("big / ABCD"; the last column's are labelled, joined by ";").
func mergeCell(a, b string, last bool) string {
	switch {
	case a == b || b == "":
		return a
	case a == "":
		return b
	case last:
		return a + "; " + b
	}
	return a + " / " + b
}

// rowKey splits a row into its key ("name", or "cert, key" for two) and
// the rest.
func rowKey(row string) (key, rest string) {
	key, rest, _ = strings.Cut(row, " ")
	for strings.HasSuffix(key, ",") {
		var next string
		next, rest, _ = strings.Cut(strings.TrimLeft(rest, " "), " ")
		key += " " + next
	}
	return key, rest
}

// columns cuts row at the header's column starts; where a cell overflows
// its column (the cut falls inside a word), rest (the row after its key)
// is cut at runs of two or more spaces instead.
func (t *docTable) columns(line, rest string) []string {
	row := []rune(line) // columns count characters: °C is one
	n := len(t.cols)
	cols := make([]string, n)
	aligned := true
	for i, start := range t.cols {
		end := len(row)
		if i+1 < n {
			end = min(t.cols[i+1], len(row))
		}
		if start > len(row) {
			continue
		}
		// a column starts after two spaces at least
		if start < 2 || row[start-1] != ' ' || row[start-2] != ' ' {
			aligned = false
			break
		}
		cols[i] = strings.TrimSpace(string(row[start:end]))
	}
	if aligned {
		return cols
	}
	cols = make([]string, n)
	fields := multiSpace().Split(strings.TrimSpace(rest), -1)
	for i, f := range fields {
		if i >= n {
			cols[n-1] += "  " + f
			continue
		}
		cols[i] = f
	}
	return cols
}

var multiSpace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`  +`) })
