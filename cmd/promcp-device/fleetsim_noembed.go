//go:build !natsserver && !nofleet

package main

import "errors"

// fleetSim needs the embedded NATS server.
func fleetSim(c *cli) int {
	return c.fail(errors.New("fleet sim runs hub members in this process: it needs a build with -tags natsserver"))
}
