package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// simLine is the host side of gpio-sim line n: its pull (the level an
// input sees) and value (what an output drives).
func simLine(n int) string {
	m, _ := filepath.Glob(fmt.Sprintf("/sys/devices/platform/gpio-sim.*/gpiochip*/sim_gpio%d", n))
	if len(m) == 0 {
		return "/nonexistent/sim_gpio"
	}
	return m[0]
}

// direction is the kernel's view of a named line in debugfs: "in" or "out".
func direction(name string) string {
	b, err := os.ReadFile("/sys/kernel/debug/gpio")
	if err != nil {
		return "error: " + err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "("+name+" ") {
			switch {
			case strings.Contains(line, ") out "):
				return "out"
			case strings.Contains(line, ") in "):
				return "in"
			}
			return strings.TrimSpace(line)
		}
	}
	return "not requested"
}

func (s *suite) gpio() {
	relay := simLine(17)
	s.check("gpio/output-opens-where-it-is", fileText(relay+"/value") == "0" && direction("GPIO17") == "out",
		"after serve opened GPIO17 (a line at 0): sim value %s, kernel direction %s", fileText(relay+"/value"), direction("GPIO17"))
	for _, on := range []bool{true, false, true, false} {
		res := s.do("do_set_relay", on)
		want := "0"
		if on {
			want = "1"
		}
		s.check(fmt.Sprintf("gpio/do-relay-%t", on), res["status"] == "success" && res["applied_value"] == on && fileText(relay+"/value") == want,
			"do_set_relay %t: %s; the kernel drives %s", on, describe(res), fileText(relay+"/value"))
		r := s.read("relay")
		s.check(fmt.Sprintf("gpio/read-back-%t", on), r["value"] == on && quality(r) == "good" && direction("GPIO17") == "out" && fileText(relay+"/value") == want,
			"read_relay after %t: %s; after the read the line is %s driving %s (want out, %s)", on, describe(r), direction("GPIO17"), fileText(relay+"/value"), want)
	}

	lamp := simLine(23) // active low; pulled up before serve started: off
	s.check("gpio/active-low-opens-off", s.read("lamp")["value"] == false && fileText(lamp+"/value") == "1",
		"read_lamp %s, line %s", describe(s.read("lamp")), fileText(lamp+"/value"))
	res := s.do("do_set_lamp", true)
	s.check("gpio/active-low-on", res["status"] == "success" && fileText(lamp+"/value") == "0" && s.read("lamp")["value"] == true,
		"do_set_lamp true: %s; line %s", describe(res), fileText(lamp+"/value"))

	door := simLine(22)
	for _, pull := range []string{"pull-up", "pull-down", "pull-up"} {
		_ = writeFile(door+"/pull", pull)
		r := s.read("door")
		s.check("gpio/input-"+pull, r["value"] == (pull == "pull-up") && quality(r) == "good",
			"GPIO22 %s from the sim side: read_door %s", pull, describe(r))
	}
	// The manifest's pulls reach the kernel as the line's bias: gpio-sim
	// lets a requested bias set the level the input sees.
	r := s.read("button")
	s.check("gpio/input-bias-pull-up", r["value"] == false && quality(r) == "good" && fileText(simLine(24)+"/pull") == "pull-up",
		"GPIO24 pull: up, active low: read_button %s; sim pull %s", describe(r), fileText(simLine(24)+"/pull"))
	r = s.read("float")
	s.check("gpio/input-bias-pull-down", r["value"] == false && quality(r) == "good" && fileText(simLine(25)+"/pull") == "pull-down",
		"GPIO25 (pulled up by the sim before serve) pull: down: read_float %s; sim pull %s", describe(r), fileText(simLine(25)+"/pull"))
	s.pulses(simLine(27))
}

// pulses gives GPIO27 50 falling edges from the sim side and expects the
// pulse counter to have counted each.
func (s *suite) pulses(line string) {
	const n = 50
	for range n {
		_ = writeFile(line+"/pull", "pull-up")
		time.Sleep(40 * time.Millisecond)
		_ = writeFile(line+"/pull", "pull-down")
		time.Sleep(40 * time.Millisecond)
	}
	var r map[string]any
	for range 50 {
		if r = s.read("pulses"); r["value"] == float64(n) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.check("gpio/pulse-count", r["value"] == float64(n) && quality(r) == "good", "%d falling edges on GPIO27: read_pulses %s", n, describe(r))
}

func (s *suite) pwm() {
	dir := "/sys/class/pwm/pwmchip0/pwm0"
	res := s.do("do_set_fan", 40)
	files := fmt.Sprintf("period %s, duty_cycle %s, enable %s", fileText(dir+"/period"), fileText(dir+"/duty_cycle"), fileText(dir+"/enable"))
	s.check("pwm/do-duty", res["status"] == "success" && res["applied_value"] == float64(40) && files == "period 40000, duty_cycle 16000, enable 1",
		"do_set_fan 40: %s; %s", describe(res), files)
	r := s.read("fan")
	s.check("pwm/read-back", r["value"] == float64(40) && quality(r) == "good", "read_fan %s", describe(r))
}

func (s *suite) onewire() {
	for range 100 { // the w1 core searches its new master's bus at once
		if _, err := os.Stat("/sys/bus/w1/devices/28-000000000003"); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := s.read("probe_ok")
	s.check("w1/ds18b20", r["value"] == 23.125 && quality(r) == "good", "read_probe_ok %s", describe(r))
	_ = writeFile("/sys/module/w1_fake/parameters/temp1", "-10500")
	r = s.read("probe_ok")
	s.check("w1/ds18b20-negative", r["value"] == -10.5 && quality(r) == "good", "after -10.5 °C: read_probe_ok %s", describe(r))
	r = s.read("probe_poweron")
	s.check("w1/power-on-85", quality(r) == "error" && strings.Contains(describe(r), "85"), "read_probe_poweron %s", describe(r))
	r = s.read("probe_crc")
	s.check("w1/crc-failure", quality(r) == "error" && strings.Contains(describe(r), "checksum mismatch"),
		"read_probe_crc %s; the kernel's w1_slave: %q", describe(r), fileText("/sys/bus/w1/devices/28-000000000003/w1_slave"))
	r = s.read("probe_gone")
	s.check("w1/missing-rom", quality(r) == "error" && strings.Contains(describe(r), "not on the w1 bus"), "read_probe_gone %s", describe(r))
}

func (s *suite) modbus() {
	r := s.read("drive_speed")
	s.check("serial/modbus-rtu-read", r["value"] == 42.0 && quality(r) == "good", "read_drive_speed over ttyS1: %s", describe(r))
	res := s.do("do_set_drive_setpoint", 20)
	r = s.read("drive_setpoint")
	s.check("serial/modbus-rtu-write", res["status"] == "success" && res["applied_value"] == float64(20) && r["value"] == float64(20),
		"do_set_drive_setpoint 20: %s; read_drive_setpoint %s", describe(res), describe(r))
}
