package sim

import (
	"bytes"
	"io"
	"sync"

	"github.com/promcp/promcp-device/manifests"
)

// LineInstrument is a simulated serial_line instrument: it answers its
// request with the line its manifest sim section gives. SetSilent makes it
// ignore requests.
type LineInstrument struct {
	w        *World
	name     string
	request  []byte
	term     []byte
	response []byte

	silent   bool // guarded by w.mu
	requests uint64
}

func newLineInstrument(w *World, d manifests.Device) *LineInstrument {
	term := d.Line.Terminator
	if term == "" {
		term = "\r\n"
	}
	in := &LineInstrument{w: w, name: d.Name, request: []byte(d.Line.Request + term), term: []byte(term)}
	if d.Sim != nil && d.Sim.Response != "" {
		in.response = []byte(d.Sim.Response + term)
	}
	return in
}

// LineInstrument returns the simulated serial_line device called name.
func (w *World) LineInstrument(name string) (*LineInstrument, bool) {
	in, ok := w.lineByName[name]
	return in, ok
}

// SetSilent makes the instrument ignore requests (the reader times out).
func (in *LineInstrument) SetSilent(on bool) { in.w.mu.Lock(); in.silent = on; in.w.mu.Unlock() }

// Requests returns how many requests the instrument has seen.
func (in *LineInstrument) Requests() uint64 {
	in.w.mu.Lock()
	defer in.w.mu.Unlock()
	return in.requests
}

// serveLine answers the instruments of one serial bus on rw until a read
// fails: whenever the input holds an instrument's request, that instrument
// answers (an instrument without a sim response stays silent).
func serveLine(w *World, ins []*LineInstrument, rw io.ReadWriter) error {
	var buf []byte
	chunk := make([]byte, 256)
	var mu sync.Mutex // one answer at a time on the line
	for {
		n, err := rw.Read(chunk)
		if err != nil {
			return err
		}
		buf = append(buf, chunk[:n]...)
		for {
			best, at := (*LineInstrument)(nil), -1
			for _, in := range ins {
				if i := bytes.Index(buf, in.request); i >= 0 && (at < 0 || i < at) {
					best, at = in, i
				}
			}
			if best == nil {
				break
			}
			buf = buf[at+len(best.request):]
			w.mu.Lock()
			best.requests++
			answer := !best.silent && best.response != nil
			w.mu.Unlock()
			if answer {
				mu.Lock()
				_, err := rw.Write(best.response)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
		}
		if len(buf) > 4096 {
			buf = buf[len(buf)-1024:]
		}
	}
}

// addLineInstrument adds a simulated text instrument on a serial line.
func addLineInstrument(w *World, d manifests.Device, _ *build) error {
	in := newLineInstrument(w, d)
	w.lineByName[d.Name] = in
	w.lineBus[d.Bus] = append(w.lineBus[d.Bus], in)
	return nil
}
