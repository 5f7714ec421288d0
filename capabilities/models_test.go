package capabilities

import (
	"testing"

	"github.com/promcp/promcp-device/manifests"
)

// Every model the manifest knows has its opener, and the table holds no
// model the manifest does not know.
func TestEveryModelHasAnOpener(t *testing.T) {
	table := models()
	for _, m := range manifests.Models() {
		if _, ok := table[m]; !ok {
			t.Errorf("model %s has no opener in capabilities' models()", m)
		}
	}
	if len(table) != len(manifests.Models()) {
		t.Errorf("capabilities' models() has %d models, the manifest %d", len(table), len(manifests.Models()))
	}
}
