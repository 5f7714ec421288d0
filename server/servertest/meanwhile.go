package servertest

import (
	"sync"
	"time"
)

// Meanwhile calls f over and over on a goroutine, a millisecond apart (in
// a synctest bubble, the bubble's time), while a test does something else:
// notifications sent or the clock moved during concurrent calls. The
// returned stop ends the loop and waits for the goroutine.
func Meanwhile(f func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
				f()
				time.Sleep(time.Millisecond)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
