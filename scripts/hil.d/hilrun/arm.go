package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/promcp/promcp-device/drivers/i2c"
)

// sht3xImage writes a 64 KiB at24c EEPROM image that answers an SHT3x's
// single-shot measure command (0x2400, two address bytes) with celsius and
// percent, each word followed by its CRC-8.
func sht3xImage(path string, celsius, percent float64) error {
	img := make([]byte, 65536)
	t := uint16(math.Round((celsius + 45) / 175 * 65535))
	h := uint16(math.Round(percent / 100 * 65535))
	reply := []byte{byte(t >> 8), byte(t), 0, byte(h >> 8), byte(h), 0}
	reply[2] = i2c.CRC8(reply[0:2])
	reply[5] = i2c.CRC8(reply[3:5])
	copy(img[0x2400:], reply)
	return os.WriteFile(path, img, 0o644)
}

func (s *suite) i2c() {
	for _, c := range []float64{25, 37.5, -12.5} {
		// The host changes the tmp105's temperature through QEMU's monitor.
		fmt.Printf("HIL WANT tmp0 temperature %d\n", int(c*1000))
		var r map[string]any
		for range 150 {
			if r = s.read("board_temperature"); r["value"] == c {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		s.check("i2c/tmp105", r["value"] == c && quality(r) == "good",
			"QEMU's tmp105 set to %g °C (qom-set) on i2c-versatile: read_board_temperature %s", c, describe(r))
	}
	r := s.read("air_temperature")
	s.check("i2c/sht3x-temperature", near(r["value"], 23.5, 0.01) && quality(r) == "good", "SHT3x reply from an at24c EEPROM: read_air_temperature %s", describe(r))
	r = s.read("air_humidity")
	s.check("i2c/sht3x-humidity", near(r["value"], 45, 0.01) && quality(r) == "good", "read_air_humidity %s", describe(r))
	r = s.read("absent_temperature")
	s.check("i2c/missing-device-nack", quality(r) == "error" && strings.Contains(describe(r), "did not acknowledge"),
		"nothing at 0x45: read_absent_temperature %s", describe(r))
}

// near reports whether v is a number within tol of want.
func near(v any, want, tol float64) bool {
	f, ok := v.(float64)
	return ok && math.Abs(f-want) <= tol
}
