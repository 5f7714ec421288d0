package chardev

import "unsafe"

// The GPIO character device's v2 uAPI (include/uapi/linux/gpio.h). The
// structures are padded explicitly by the kernel, so that they have the same
// layout on 32- and 64-bit machines; the tests check their sizes.

const (
	maxNameSize  = 32 // GPIO_MAX_NAME_SIZE
	linesMax     = 64 // GPIO_V2_LINES_MAX
	numAttrsMax  = 10 // GPIO_V2_LINE_NUM_ATTRS_MAX
	eventSize    = 48 // sizeof(struct gpio_v2_line_event)
	attrIDValues = 2  // GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES
)

// Line flags (enum gpio_v2_line_flag).
const (
	flagInput        uint64 = 1 << 2
	flagOutput       uint64 = 1 << 3
	flagEdgeRising   uint64 = 1 << 4
	flagEdgeFalling  uint64 = 1 << 5
	flagBiasPullUp   uint64 = 1 << 8
	flagBiasPullDown uint64 = 1 << 9
	flagBiasDisabled uint64 = 1 << 10
)

type lineAttribute struct {
	id      uint32
	padding uint32
	value   uint64 // union: flags, values or debounce_period_us
}

type lineConfigAttribute struct {
	attr lineAttribute
	mask uint64
}

type lineConfig struct {
	flags    uint64
	numAttrs uint32
	padding  [5]uint32
	attrs    [numAttrsMax]lineConfigAttribute
}

type lineRequest struct {
	offsets         [linesMax]uint32
	consumer        [maxNameSize]byte
	config          lineConfig
	numLines        uint32
	eventBufferSize uint32
	padding         [5]uint32
	fd              int32
}

type lineValues struct {
	bits uint64
	mask uint64
}

// ioctl request numbers: _IOWR(0xB4, nr, type).
var (
	ioctlGetLine   = iowr(0x07, unsafe.Sizeof(lineRequest{})) // GPIO_V2_GET_LINE_IOCTL
	ioctlSetConfig = iowr(0x0D, unsafe.Sizeof(lineConfig{}))  // GPIO_V2_LINE_SET_CONFIG_IOCTL
	ioctlGetValues = iowr(0x0E, unsafe.Sizeof(lineValues{}))  // GPIO_V2_LINE_GET_VALUES_IOCTL
	ioctlSetValues = iowr(0x0F, unsafe.Sizeof(lineValues{}))  // GPIO_V2_LINE_SET_VALUES_IOCTL
)

// iowr is the kernel's _IOWR for the GPIO ioctl type 0xB4, in the generic
// encoding that x86, arm and arm64 share.
func iowr(nr, size uintptr) uintptr {
	const read, write = 2, 1
	return (read|write)<<30 | size<<16 | 0xB4<<8 | nr
}
