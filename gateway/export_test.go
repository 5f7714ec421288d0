package gateway

// Units is units, for the external tests: the actions each action's
// do_* reserves together with.
var Units = units
