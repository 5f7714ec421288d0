package manifests

import (
	"strings"
	"testing"
)

// The model lists in messages are built from the table of models: every
// model is named for some bus kind, and in the sim.values list exactly
// when its simulator takes values.
func TestModelListsNameEveryModel(t *testing.T) {
	for _, m := range models {
		named := false
		for _, k := range busKinds {
			named = named || strings.Contains(modelsFor(BusKind(k)), m)
		}
		if !named {
			t.Errorf("model %s is in no bus kind's list of models", m)
		}
		if hasSimValues(Model(m)) != strings.Contains(simValuesWant(), " "+m) {
			t.Errorf("model %s: hasSimValues %t, but the sim.values message says otherwise: %s", m, hasSimValues(Model(m)), simValuesWant())
		}
	}
}
