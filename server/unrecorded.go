package server

import "github.com/promcp/promcp-device/promcp"

// unrecordedReason is added to a do_* result whose outcome the idempotency
// store could not record (idempotency.ErrNotRecorded: a full state disk).
// The text is fixed so that every retry with the key gets the same body.
const unrecordedReason = "the action ran, but its result could not be saved to the state disk (is it full?): " +
	"retries with this idempotency_key return this answer while the gateway runs; read the device to confirm its state"

// markUnrecorded turns a result the store could not record into partial:
// the device was touched, and the gateway cannot vouch for the record of
// it. Applied in the same way to the first answer and to its replays.
func markUnrecorded(r *promcp.DoResult) {
	if r.Status == promcp.StatusSuccess {
		r.Status = promcp.StatusPartial
	}
	r.Reason = joinReason(r.Reason, unrecordedReason)
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
