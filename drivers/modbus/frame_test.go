package modbus

import (
	"bytes"
	"errors"
	"testing"

	"github.com/promcp/promcp-device/drivers"
)

// FuzzReadResponse: the RTU and MBAP response readers never panic on bytes
// from a device (or line noise), and an RTU frame they accept has a valid
// CRC.
func FuzzReadResponse(f *testing.F) {
	f.Add(AppendCRC([]byte{1, 3, 2, 0, 7}))
	f.Add(AppendCRC([]byte{1, 0x83, 2}))
	f.Add(AppendCRC([]byte{1, 6, 0, 0, 0, 7}))
	f.Add([]byte{0, 1, 0, 0, 0, 5, 1, 3, 2, 0, 7})
	f.Add([]byte{1, 3, 255})
	f.Fuzz(func(t *testing.T, in []byte) {
		if frame, err := readRTUResponse(bytes.NewReader(in)); err == nil && !CheckCRC(frame) {
			t.Fatalf("accepted % x with a bad CRC", frame)
		}
		readMBAP(bytes.NewReader(in))
		readStreamFrame(bytes.NewReader(in), false)
		if frame, err := readStreamFrame(bytes.NewReader(in), true); err == nil && !CheckCRC(frame) {
			t.Fatalf("stream reader accepted % x with a bad CRC", frame)
		}
	})
}

func TestCRC(t *testing.T) {
	// Read holding register 0 of unit 1: a frame every Modbus tool prints.
	got := AppendCRC([]byte{0x01, 0x03, 0x00, 0x00, 0x00, 0x01})
	if want := []byte{0x01, 0x03, 0x00, 0x00, 0x00, 0x01, 0x84, 0x0A}; !bytes.Equal(got, want) {
		t.Fatalf("AppendCRC = % x, want % x", got, want)
	}
	if _, err := readRTUResponse(bytes.NewReader(AppendCRC([]byte{1, 3, 2, 0, 7})[:6])); err == nil {
		t.Fatal("a truncated frame was accepted")
	}
	garbled := AppendCRC([]byte{1, 3, 2, 0, 7})
	garbled[6] ^= 0xFF
	if _, err := readRTUResponse(bytes.NewReader(garbled)); !errors.Is(err, drivers.ErrCRC) {
		t.Fatalf("garbled frame: %v, want ErrCRC", err)
	}
}
