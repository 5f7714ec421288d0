// Package perf holds what the benchmarks, the load tool and the comparison
// script share: a generator of greenhouse-like manifests of any size, so
// that can_do and tools/list can be measured at 10, 100 or 1,000
// capabilities without checking in large files.
package perf

import (
	"fmt"
	"strings"
)

// Manifest returns the YAML of a simulated gateway with n capabilities
// (n >= 1): zones of five, each an SHT3x (temperature and humidity, two
// sensors per I²C bus) and three relays on GPIO: a heater and a vent that
// depend on the zone's readings, and a lamp. A broad intent such as
// semantic_tags [temperature] matches two actions per zone, each with
// depends_on sensors, which is can_do's worst case. The last zone is cut
// short when n is not a multiple of five.
func Manifest(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\ngateway: perf-1\ndescription: Generated greenhouse for benchmarks.\nbuses:\n  - {name: gpio, kind: gpio}\n")
	zones := (n + 4) / 5
	for i := 0; i < zones; i += 2 {
		fmt.Fprintf(&b, "  - {name: i2c%d, kind: i2c, timeout: 100ms}\n", i/2)
	}
	b.WriteString("devices:\n")
	for i := range zones {
		fmt.Fprintf(&b, "  - {name: climate_z%d, bus: i2c%d, model: sht3x, address: 0x%x}\n", i, i/2, 0x44+i%2)
		for j, r := range []string{"heater", "vent", "lamp"} {
			fmt.Fprintf(&b, "  - {name: %s_z%d, bus: gpio, model: gpio_out, pin: GPIO%d}\n", r, i, 1000+3*i+j)
		}
	}
	b.WriteString("capabilities:\n")
	written := 0
	for i := range zones {
		for _, c := range zoneCapabilities(fmt.Sprintf("z%d", i)) {
			if written < n {
				b.WriteString(c)
				written++
			}
		}
	}
	b.WriteString("sim:\n  zones:\n")
	for i := range zones {
		fmt.Fprintf(&b, "    - {name: z%d, temperature: 20, humidity: 50, outside: 10, noise: 0.05, sensors: [climate_z%d]}\n", i, i)
	}
	return b.String()
}

// zoneCapabilities are the five capabilities of zone z: its two climate
// sensors and its three relays.
func zoneCapabilities(z string) []string {
	sensor := func(what, unit, tags, more string) string {
		return fmt.Sprintf("  - name: %[2]s_%[1]s\n    type: number\n    unit: %[3]q\n    ttl: 2s\n    location: %[1]s\n"+
			"    tags: [%[4]s]\n    read: {device: climate_%[1]s, channel: %[2]s}\n%[5]s", z, what, unit, tags, more)
	}
	relay := func(what, tags, effect, more string) string {
		return fmt.Sprintf("  - name: %[2]s_%[1]s\n    type: boolean\n    location: %[1]s\n    tags: [%[3]s]\n    read: {device: %[2]s_%[1]s}\n"+
			"    do: {tool: do_set_%[2]s_%[1]s, side_effects: [%[4]s], compensable: true%[5]s}\n", z, what, tags, effect, more)
	}
	return []string{
		sensor("temperature", "°C", "temperature, air, climate", "    health: {plausible: {min: -10, max: 60}, max_stale: 30s}\n"),
		sensor("humidity", "%", "humidity, air, climate", ""),
		relay("heater", "heater, heating, warm, temperature, relay", "air temperature rises in "+z, ", depends_on: [temperature_"+z+"], safe_value: false"),
		relay("vent", "vent, ventilation, cooling, cool, temperature, humidity", "air temperature falls in "+z, ", depends_on: [temperature_"+z+", humidity_"+z+"]"),
		relay("lamp", "lamp, light, relay", "light in "+z, ""),
	}
}
