package main

import (
	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/i2c"
)

type (
	i2cBusCloser = i2c.BusCloser
	pinIO        = gpio.PinIO
)
