package manifests_test

import (
	"fmt"

	"github.com/promcp/promcp-device/manifests"
)

func ExampleOneOf() {
	fmt.Println(manifests.OneOf([]string{"ch0", "ch1", "raw"}, "none declared"))
	fmt.Println(manifests.OneOf([]string{"ch0", "ch1"}, "none declared"))
	fmt.Println(manifests.OneOf(nil, "none declared"))
	// Output:
	// ch0, ch1 or raw
	// ch0 or ch1
	// none declared
}
