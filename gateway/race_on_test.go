//go:build race

package gateway_test

// raceEnabled: the race detector makes 1 MB JSON round trips through the
// MCP client ~8 times slower, so the refusal flood sends fewer under it.
const raceEnabled = true
