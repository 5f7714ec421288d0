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
	add := func(s string) bool {
		if written == n {
			return false
		}
		b.WriteString(s)
		written++
		return true
	}
	for i := range zones {
		z := fmt.Sprintf("z%d", i)
		_ = add(fmt.Sprintf(`  - name: temperature_%[1]s
    type: number
    unit: "°C"
    ttl: 2s
    location: %[1]s
    tags: [temperature, air, climate]
    read: {device: climate_%[1]s, channel: temperature}
    health: {plausible: {min: -10, max: 60}, max_stale: 30s}
`, z)) && add(fmt.Sprintf(`  - name: humidity_%[1]s
    type: number
    unit: "%%"
    ttl: 2s
    location: %[1]s
    tags: [humidity, air, climate]
    read: {device: climate_%[1]s, channel: humidity}
`, z)) && add(fmt.Sprintf(`  - name: heater_%[1]s
    type: boolean
    location: %[1]s
    tags: [heater, heating, warm, temperature, relay]
    read: {device: heater_%[1]s}
    do: {tool: do_set_heater_%[1]s, side_effects: [air temperature rises in %[1]s], compensable: true, depends_on: [temperature_%[1]s], safe_value: false}
`, z)) && add(fmt.Sprintf(`  - name: vent_%[1]s
    type: boolean
    location: %[1]s
    tags: [vent, ventilation, cooling, cool, temperature, humidity]
    read: {device: vent_%[1]s}
    do: {tool: do_set_vent_%[1]s, side_effects: [air temperature falls in %[1]s], compensable: true, depends_on: [temperature_%[1]s, humidity_%[1]s]}
`, z)) && add(fmt.Sprintf(`  - name: lamp_%[1]s
    type: boolean
    location: %[1]s
    tags: [lamp, light, relay]
    read: {device: lamp_%[1]s}
    do: {tool: do_set_lamp_%[1]s, side_effects: [light in %[1]s], compensable: true}
`, z))
	}
	b.WriteString("sim:\n  zones:\n")
	for i := range zones {
		fmt.Fprintf(&b, "    - {name: z%d, temperature: 20, humidity: 50, outside: 10, noise: 0.05, sensors: [climate_z%d]}\n", i, i)
	}
	return b.String()
}
