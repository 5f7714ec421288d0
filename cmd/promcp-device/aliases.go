package main

import (
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/i2c"
	"periph.io/x/conn/v3/spi"
)

type (
	i2cBusCloser = i2c.BusCloser
	pinIO        = gpio.PinIO

	spiPortCloser = spi.PortCloser
)
