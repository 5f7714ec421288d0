package sim

import (
	"testing"

	"github.com/promcp/promcp-device/manifests"
)

// Every model the manifest knows has its simulated twin, and the table
// holds no model the manifest does not know.
func TestEveryModelHasATwin(t *testing.T) {
	table := models()
	for _, m := range manifests.Models() {
		if _, ok := table[m]; !ok {
			t.Errorf("model %s has no simulated twin in sim's models()", m)
		}
	}
	if len(table) != len(manifests.Models()) {
		t.Errorf("sim's models() has %d models, the manifest %d", len(table), len(manifests.Models()))
	}
}
