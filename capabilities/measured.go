package capabilities

import (
	"context"
	"fmt"

	"github.com/promcp/promcp-device/manifests"
)

// measurement is one channel of a chip whose one measurement (a sample S)
// serves all its channels: how the channel's value is picked from the
// sample, the digits it is rounded to, and the conversion its Binding
// names.
type measurement[S any] struct {
	channel    string
	pick       func(S) float64
	digits     int
	conversion string
}

// measured serves a read-only I2C chip whose channels, chans, all come
// from one measurement: sense takes it, raw is the bytes it rests on (the
// grounds of a reading), rawForm says what those bytes are. The channels
// share one sampler, so one transaction serves them all.
func measured[S any](d manifests.Device, e env, sense func(context.Context) (S, error), raw func(S) []byte, rawForm string, chans []measurement[S]) *device {
	shared := newSampler(e.clock, func(ctx context.Context) (any, []byte, error) {
		s, err := sense(ctx)
		if err != nil {
			return nil, nil, err
		}
		return s, raw(s), nil
	})
	find := func(channel string) (measurement[S], bool) {
		for _, m := range chans {
			if m.channel == channel {
				return m, true
			}
		}
		return measurement[S]{}, false
	}
	return &device{
		model: d.Model,
		source: func(channel string, t manifests.ValueType) (*sampler, func(any) any, error) {
			m, ok := find(channel)
			if !ok {
				names := make([]string, len(chans))
				for i, m := range chans {
					names[i] = m.channel
				}
				return nil, nil, fmt.Errorf("%s has no channel %q (want %s)", d.Model, channel, oneOfChannels(names))
			}
			return shared, func(v any) any { return numeric(round(m.pick(v.(S)), m.digits), t) }, nil
		},
		writer: noWriter(d.Model),
		bind: func(channel string) Binding {
			m, _ := find(channel)
			return i2cBinding(d, channel, rawForm, m.conversion)
		},
	}
}

// i2cBinding is the Binding of a channel of the I2C device d.
func i2cBinding(d manifests.Device, channel, rawForm, conversion string) Binding {
	return Binding{Driver: "i2c", Address: fmt.Sprintf("0x%02x", d.Address), Register: channel,
		RawForm: rawForm, Conversion: conversion}
}

// oneOfChannels lists channels as "a, b or c".
func oneOfChannels(chans []string) string { return manifests.OneOf(chans, "none declared") }
